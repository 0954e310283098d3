/**
 * @lib/chain: ethers v6 access to the project's contracts (docs/architecture.md §7). Framework-free; never imports src/.
 */
export { createProvider, type CreateProviderOptions } from './provider';
export {
  ANVIL_CHAIN_ID,
  ANVIL_KEYS,
  ANVIL_MNEMONIC,
  ANVIL_ROLES,
  anvilBinaryPath,
  anvilKey,
  probeChainId,
  startAnvil,
  type AnvilInstance,
  type AnvilRole,
  type StartAnvilOptions,
} from './anvil';
export {
  codeMatches,
  deployEscrowContract,
  deployLocalContracts,
  hasLocalContracts,
  type DeployedEscrow,
  type DeployEscrowOptions,
  type DeployLocalContractsOptions,
  type LocalContracts,
} from './deploy';
export { escrowKeyFromId, escrowKeyParts, idFromEscrowKey, MAX_ESCROW_ATTEMPT } from './escrow-key';
export {
  ESCROW_EIP712_NAME,
  ESCROW_EIP712_VERSION,
  ESCROW_ACTION_TYPES,
  MAX_ESCROW_ACTION_VALIDITY,
  EscrowGateway,
  FUNDING_TERMS_TYPES,
  type ActionExpectation,
  type EscrowGatewayConfig,
  type EscrowLogInput,
  type ReceiveAuthorizationRequest,
} from './escrow-gateway';
export {
  UsdcGateway,
  RECEIVE_WITH_AUTHORIZATION_TYPES,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  CANCEL_AUTHORIZATION_TYPES,
  decodeAuthorizationCall,
  type AuthorizationUsedLog,
  type Eip3009Authorization,
  type Eip3009Call,
  type Eip712Domain,
  type TransferAuthorization,
  type UsdcGatewayConfig,
} from './usdc-gateway';
export { ChainClock } from './chain-clock';
export { connectChain, type ChainGateways, type ChainGatewaysConfig } from './gateways';
export { TxSender, toTxError } from './tx-sender';
export {
  ESCROW_ACTION_CODES,
  ESCROW_ACTION_EVENT,
  ESCROW_STATES,
  type EscrowChainAction,
  type EscrowChainEvent,
  type EscrowEventBase,
  type EscrowPartyAction,
  type EscrowState,
  type FundingTerms,
  type OnChainEscrow,
  type ReceiveAuthorization,
  type SignedEscrowAction,
  type VerifiedAction,
} from './escrow-types';
export { ERC20_TRANSFER_TOPIC, readTokenTransfers, type MinedTokenTransfers, type TokenTransfer } from './usdc-transfers';
export { ChainTxError, ChainTxPendingError, ChainVerificationError, isNodeError, tokenRefusal, type ChainVerificationReason, type TokenRefusal } from './errors';
export { defaultConfirmations, isConfirmed, lastConfirmedBlock } from './confirmations';
