import { Interface, Wallet, ZeroAddress, hexlify, randomBytes, type Provider } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact } from '@lib/contracts';
import { codeMatches } from './deploy';
import { connectChain } from './gateways';
import { escrowKeyFromId } from './escrow-key';

const ESCROW = '0x00000000000000000000000000000000000000e5';
const USDC = '0x00000000000000000000000000000000000000c0';
const iface = new Interface(CheckoutEscrowArtifact.abi);
const gateway = connectChain({} as Provider, { escrowAddress: ESCROW, usdcAddress: USDC }).escrow;
const key = escrowKeyFromId('0190f3c1-7a2b-7c3d-8e4f-a1b2c3d4e5f6');
const buyer = Wallet.createRandom().address;
const seller = Wallet.createRandom().address;

let index = 0;
function log(event: string, args: unknown[]) {
  const { topics, data } = iface.encodeEventLog(event, args);
  return { address: ESCROW, topics, data, transactionHash: hexlify(randomBytes(32)), index: index++, blockNumber: 7, blockHash: hexlify(randomBytes(32)) };
}

describe('EscrowGateway.decodeLogs', () => {
  it('maps each CheckoutEscrow event to its action with typed arguments', () => {
    const logs = [
      log('Funded', [key, buyer, seller, 5_000_000n, 86_400n]),
      log('Accepted', [key, seller]),
      log('Declined', [key, seller]),
      log('Delivered', [key, 1_700_000_000n, seller]),
      log('Released', [key, buyer]),
      log('Cancelled', [key, buyer]),
      log('Disputed', [key, seller]),
      log('Resolved', [key, true]),
    ];
    const events = gateway.decodeLogs(logs);
    expect(events.map((e) => e.action)).toEqual(['funded', 'accepted', 'declined', 'delivered', 'released', 'cancelled', 'disputed', 'resolved']);
    expect(events[0]).toEqual({
      action: 'funded',
      escrowKey: key,
      buyer,
      seller,
      amount: 5_000_000n,
      inspectionWindow: 86_400,
      by: buyer,
      txHash: logs[0].transactionHash,
      logIndex: logs[0].index,
      blockNumber: 7,
      blockHash: logs[0].blockHash,
    });
    expect(events.map((e) => ('by' in e ? e.by : null))).toEqual([buyer, seller, seller, seller, buyer, buyer, seller, null]);
    expect(events[3]).toMatchObject({ autoReleaseAt: 1_700_000_000 });
    expect(events[4]).toMatchObject({ by: buyer });
    expect(events[6]).toMatchObject({ by: seller });
    expect(events[7]).toMatchObject({ toSeller: true });
  });

  it('skips other contracts, removed logs, admin events and undecodable data', () => {
    const funded = log('Funded', [key, buyer, seller, 1n, 0n]);
    expect(
      gateway.decodeLogs([
        { ...funded, address: USDC },
        { ...funded, removed: true },
        log('TermsSignerChanged', [ZeroAddress, seller]),
        { ...funded, data: '0x01' },
        { ...funded, topics: [hexlify(randomBytes(32)), ...funded.topics.slice(1)] },
      ]),
    ).toEqual([]);
  });

  it('computes the EIP-712 digest locally and per chain', () => {
    const terms = { escrowKey: key, buyer, seller, amount: 1n, inspectionWindow: 0, deadline: 1n };
    expect(gateway.fundingTermsDigest(terms, 1)).toMatch(/^0x[0-9a-f]{64}$/);
    expect(gateway.fundingTermsDigest(terms, 1)).not.toBe(gateway.fundingTermsDigest(terms, 31337));
    expect(gateway.fundingTermsDigest({ ...terms, inspectionWindow: 0n }, 1)).toBe(gateway.fundingTermsDigest(terms, 1));
    expect(gateway.fundingTermsDigest({ ...terms, buyer: seller }, 1)).not.toBe(gateway.fundingTermsDigest(terms, 1));
  });
});

describe('codeMatches', () => {
  it('ignores immutable slots and nothing else', () => {
    const artifact = CheckoutEscrowArtifact;
    expect(artifact.immutableReferences.length).toBeGreaterThan(0);
    const code = artifact.deployedBytecode.slice(2).split('');
    const { start } = artifact.immutableReferences[0];
    code.splice(start * 2, 2, 'a', 'b');
    expect(codeMatches(`0x${code.join('')}`, artifact)).toBe(true);
    const outside = artifact.deployedBytecode.slice(2).split('');
    outside.splice(0, 2, outside[0] === 'f' ? '0' : 'f', outside[1]);
    expect(codeMatches(`0x${outside.join('')}`, artifact)).toBe(false);
    expect(codeMatches(artifact.deployedBytecode, TestUSDCArtifact)).toBe(false);
    expect(codeMatches('0x', artifact)).toBe(false);
  });
});
