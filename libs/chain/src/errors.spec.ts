import { JsonRpcProvider, makeError } from 'ethers';
import { ChainTxError, isNodeError, tokenRefusal } from './errors';

describe('tokenRefusal (FiatToken v2.2 reasons, DESIGN §18)', () => {
  const decoded = (reason: string) => new ChainTxError(`transfer: Error(${reason})`, 'Error', [reason], '0x08c379a0', null);

  it('names a pause and a blacklisted party from the decoded Error(string)', () => {
    expect(tokenRefusal(decoded('Pausable: paused'))).toBe('paused');
    expect(tokenRefusal(decoded('Blacklistable: account is blacklisted'))).toBe('blacklisted');
  });

  it('falls back to the message when the revert data was not decoded', () => {
    expect(tokenRefusal(new ChainTxError('execution reverted: "Pausable: paused"', null, [], null, null))).toBe('paused');
  });

  it('anything else is not the token’s refusal', () => {
    expect(tokenRefusal(decoded('ERC20: transfer amount exceeds balance'))).toBeNull();
    expect(tokenRefusal(new ChainTxError('fund: AlreadyFunded()', 'AlreadyFunded', [], '0x', null))).toBeNull();
    expect(tokenRefusal(new Error('Pausable: paused'))).toBeNull();
  });
});

describe('isNodeError (DESIGN §22: a read the node failed is 503, never 500 nor a refusal)', () => {
  // ethers' own mapping of a JSON-RPC error response, as a live provider applies it (no network used).
  const provider = new JsonRpcProvider('http://127.0.0.1:9', 31337, { staticNetwork: true });
  const rpcError = (method: string, error: { code: number; message: string; data?: string }, params: unknown[] = [{ to: '0x' + '11'.repeat(20), data: '0x' }]) =>
    provider.getRpcError({ method, params, id: 1, jsonrpc: '2.0' }, { id: 1, error });
  afterAll(() => provider.destroy());

  it.each([
    ['eth_getLogs after a reorg (anvil)', rpcError('eth_getLogs', { code: -32000, message: 'BlockOutOfRangeError: block height is 5 but requested was 7' })],
    ['eth_call at a block the node lost', rpcError('eth_call', { code: -32000, message: 'header not found' })],
    ['eth_getBalance with an internal error', rpcError('eth_getBalance', { code: -32603, message: 'internal error' })],
    ['a timeout', makeError('request timeout', 'TIMEOUT', { operation: 'eth_blockNumber' } as never)],
    ['a 502 from the node', makeError('server response 502', 'SERVER_ERROR', {} as never)],
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8545'), { code: 'ECONNREFUSED' })],
    ['a latest block the node returned as null', new Error('node returned no latest block')],
  ])('%s is a node error', (_, err) => {
    expect(isNodeError(err)).toBe(true);
  });

  it.each([
    ['a revert with data', rpcError('eth_call', { code: 3, message: 'execution reverted', data: '0x08c379a0' + '0'.repeat(128) })],
    ['a revert without a reason', rpcError('eth_call', { code: 3, message: 'execution reverted', data: '0x' })],
    ['a revert whose node sends no data', rpcError('eth_call', { code: -32000, message: 'execution reverted' })],
    ['a ChainTxError', new ChainTxError('fund: reverted', null, [], null, null, { cause: makeError('request timeout', 'TIMEOUT', {} as never) })],
    ['a plain bug', new TypeError('x is undefined')],
    // x402's verifier calls Multicall3, which our anvil does not deploy: the node answered "no code here".
    ['an empty result of a call to an address without code', makeError('could not decode result data', 'BAD_DATA', { value: '0x', info: { method: 'tryAggregate' } } as never)],
  ])('%s is not', (_, err) => {
    expect(isNodeError(err)).toBe(false);
  });
});
