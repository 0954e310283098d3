import type { TransactionReceipt } from 'ethers';
import type { ChainAccess } from '../chain-access.service';
import type { AppConfig } from '../../config/app-config';
import type { RelayerRepository, RelayTxRow } from './relayer.repository';
import { RelayerService } from './relayer.service';

/**
 * Review F5 (DESIGN §18 "Confirmations", §22): the live relay of an intent counts as mined only when a
 * hash of it has a successful receipt at head − CONFIRMATIONS; a receipt at the latest block only, or a
 * reverted one, does not end the intent (sweep would otherwise open a new intent and sign again).
 */
describe('RelayerService.liveRelay: mined = successful and confirmed (review F5)', () => {
  const H1 = `0x${'11'.repeat(32)}`;
  const H2 = `0x${'22'.repeat(32)}`;
  const service = (row: Partial<RelayTxRow>, receipts: Record<string, { status: number; blockNumber: number }>, head: number, confirmations = 2) => {
    const repo = { live: () => Promise.resolve({ id: 'r1', status: 'broadcast', minedTxHash: null, minedBlock: null, txHashes: [H1, H2], ...row }) } as unknown as RelayerRepository;
    const provider = {
      getTransactionReceipt: (h: string) => Promise.resolve((receipts[h] ? { hash: h, ...receipts[h] } : null) as TransactionReceipt | null),
      getBlockNumber: () => Promise.resolve(head),
    };
    const chain = { provider, read: <T>(_: string, fn: () => Promise<T>) => fn() } as unknown as ChainAccess;
    const config = { env: { CONFIRMATIONS: confirmations } } as unknown as AppConfig;
    return new RelayerService(null as never, repo, null as never, chain, config);
  };

  it('a successful receipt only at the latest block (head − CONFIRMATIONS below it) is not mined yet', async () => {
    expect((await service({}, { [H1]: { status: 1, blockNumber: 100 } }, 101).liveRelay('sweep', 'a:sweep'))?.mined).toBe(false);
  });

  it('a reverted receipt, even confirmed, is not mined (the intent did not happen)', async () => {
    expect((await service({}, { [H1]: { status: 0, blockNumber: 100 } }, 110).liveRelay('sweep', 'a:sweep'))?.mined).toBe(false);
  });

  it('a recorded minedTxHash whose block is not yet at head − CONFIRMATIONS is not mined yet', async () => {
    expect((await service({ minedTxHash: H1, minedBlock: 100 }, { [H1]: { status: 1, blockNumber: 100 } }, 100).liveRelay('sweep', 'a:sweep'))?.mined).toBe(false);
  });

  it('a successful receipt of any of its hashes (a fee bump) at head − CONFIRMATIONS is mined', async () => {
    expect((await service({}, { [H2]: { status: 1, blockNumber: 100 } }, 102).liveRelay('sweep', 'a:sweep'))?.mined).toBe(true);
    expect((await service({ minedTxHash: H2, minedBlock: 100 }, { [H2]: { status: 1, blockNumber: 100 } }, 102).liveRelay('sweep', 'a:sweep'))?.mined).toBe(true);
  });
});
