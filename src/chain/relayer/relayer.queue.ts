/** The one BullMQ queue every relayer transaction goes through (docs/architecture.md §5). */
export const RELAYER_QUEUE = 'relayer';

/** Job data: the relayer_transactions row to sign and broadcast. */
export interface RelayerJobData {
  relayTxId: string;
}

/** Job result: the broadcast transaction's hash. */
export interface RelayerJobResult {
  txHash: string;
}
