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

/**
 * Runs `sql`, a `SELECT id, status, amount, <payee address> AS payee, <payer address> AS payer … WHERE
 * id = $1 AND <payee handle> = $2 FOR UPDATE` of one of the payments module's tables, on `em` (the
 * caller's transaction), and reads its row as {@link ReceivedMoney}; null when there is none.
 */
export async function lockReceivedRow(em: { query(sql: string, params: unknown[]): Promise<unknown> }, sql: string, id: string, handle: string): Promise<ReceivedMoney | null> {
  const rows = (await em.query(sql, [id, handle])) as Array<{ id: string; status: string; amount: string; payee: string | null; payer: string | null }>;
  const r = rows[0];
  return r ? { id: r.id, status: r.status, amount: BigInt(r.amount), payeeAddress: r.payee, payerAddress: r.payer } : null;
}
