/**
 * Money an organisation received (a payment or an x402 settlement), as a refund's bound reads it under
 * the row's lock (DESIGN §21): the row's own status, the amount in base units, the address that
 * received it and the payer's.
 */
export interface ReceivedMoney {
  id: string;
  status: string;
  amount: bigint;
  payeeAddress: string | null;
  payerAddress: string | null;
}
