import { Interface, type Provider, Wallet, hexlify, randomBytes } from 'ethers';
import { connectChain } from '@lib/chain';
import { TestUSDCArtifact } from '@lib/contracts';
import { ChainUnavailableError } from '../chain-access.service';
import { Eip3009RelayCheck } from './eip3009-relay-check';

const USDC_ADDRESS = '0x00000000000000000000000000000000000000c0';
const chainGateways = connectChain({} as Provider, { escrowAddress: '0x00000000000000000000000000000000000000e5', usdcAddress: USDC_ADDRESS });
const usdcAbi = new Interface(TestUSDCArtifact.abi);
const NOW = 1_800_000_000;

/** An authorization of 1 USDC valid until `validBefore` (unix seconds), with a well-formed signature. */
function authorization(validBefore: number) {
  const signer = Wallet.createRandom();
  const signature = signer.signingKey.sign(hexlify(randomBytes(32))).serialized;
  return { from: signer.address, to: Wallet.createRandom().address, value: 1_000_000n, validAfter: 0n, validBefore: BigInt(validBefore), nonce: hexlify(randomBytes(32)), signature };
}

/** A check over a chain whose one-block read answers `at` (or fails with it), recording what it was asked. */
function checkOver(at: { used: boolean; timestamp: number } | Error) {
  const reads: Array<[string, string]> = [];
  const chain = {
    authorizationAt: (authorizer: string, nonce: string) => {
      reads.push([authorizer, nonce]);
      return at instanceof Error ? Promise.reject(at) : Promise.resolve({ ...at, blockNumber: 7 });
    },
  };
  return { check: new Eip3009RelayCheck('TestRelayCheck', ['payment', 'x402'], chain), reads };
}

describe('Eip3009RelayCheck (DESIGN §22 "Dead only when proven": one read at head − CONFIRMATIONS)', () => {
  it('still usable: unused and the block time before validBefore; it reads the calldata’s own (from, nonce)', async () => {
    const auth = authorization(NOW + 1);
    const { check, reads } = checkOver({ used: false, timestamp: NOW });
    expect(await check.stillUsable({ data: chainGateways.usdc.encodeTransferWithAuthorization(auth) })).toBe('usable');
    expect(reads).toEqual([[auth.from, auth.nonce]]);
    expect(check.purposes).toEqual(['payment', 'x402']);
  });

  it('used or cancelled (authorizationState true, as USDC records both) is dead, whatever the time', async () => {
    const { check } = checkOver({ used: true, timestamp: NOW });
    expect(await check.stillUsable({ data: chainGateways.usdc.encodeTransferWithAuthorization(authorization(NOW + 3600)) })).toBe('dead');
  });

  it('expired: the block time at validBefore (an exclusive bound) or past it is dead; one second before is usable', async () => {
    const data = chainGateways.usdc.encodeTransferWithAuthorization(authorization(NOW));
    expect(await checkOver({ used: false, timestamp: NOW }).check.stillUsable({ data })).toBe('dead');
    expect(await checkOver({ used: false, timestamp: NOW + 60 }).check.stillUsable({ data })).toBe('dead');
    expect(await checkOver({ used: false, timestamp: NOW - 1 }).check.stillUsable({ data })).toBe('usable');
  });

  it('judges receiveWithAuthorization calldata the same way', async () => {
    const auth = authorization(NOW + 1);
    const { v, r, s } = Wallet.createRandom().signingKey.sign(hexlify(randomBytes(32)));
    const data = usdcAbi.encodeFunctionData('receiveWithAuthorization', [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, v, r, s]);
    const usable = checkOver({ used: false, timestamp: NOW });
    expect(await usable.check.stillUsable({ data })).toBe('usable');
    expect(usable.reads).toEqual([[auth.from, auth.nonce]]);
    expect(await checkOver({ used: true, timestamp: NOW }).check.stillUsable({ data })).toBe('dead');
  });

  it('a read the node failed is not proof: unknown (and it does not throw)', async () => {
    const data = chainGateways.usdc.encodeTransferWithAuthorization(authorization(NOW));
    expect(await checkOver(new ChainUnavailableError('authorization state', new Error('timeout'))).check.stillUsable({ data })).toBe('unknown');
    expect(await checkOver(new Error('header not found')).check.stillUsable({ data })).toBe('unknown');
  });

  it('calldata that is not an EIP-3009 use answers unknown without a read', async () => {
    const { check, reads } = checkOver({ used: true, timestamp: NOW });
    expect(await check.stillUsable({ data: chainGateways.usdc.encodeTransfer(Wallet.createRandom().address, 1n) })).toBe('unknown');
    expect(await check.stillUsable({ data: '0x' })).toBe('unknown');
    expect(await check.stillUsable({ data: '0xdeadbeef' })).toBe('unknown');
    expect(reads).toEqual([]);
  });
});
