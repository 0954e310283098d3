/**
 * `@lib/chain` testing senders (tests, bench, chaos run): sends with no production caller. Import by
 * relative path (`libs/chain/src/testing`); never from src/.
 */
export { EscrowTestSenders, type SignedRelayTx } from './escrow-senders';
