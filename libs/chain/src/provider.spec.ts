import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isError } from 'ethers';
import { createProvider } from './provider';

describe('createProvider', () => {
  it('knows its network without asking the node (staticNetwork)', async () => {
    const provider = createProvider('http://127.0.0.1:9', 31337);
    try {
      expect((await provider.getNetwork()).chainId).toBe(31337n);
    } finally {
      provider.destroy();
    }
  });

  it('gives up on a node that never answers after timeoutMs with an ethers TIMEOUT error', async () => {
    const server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const provider = createProvider(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 31337, { timeoutMs: 200 });
    const started = Date.now();
    try {
      const err: unknown = await provider.getBlockNumber().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isError(err, 'TIMEOUT')).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      provider.destroy();
      server.closeAllConnections();
      server.close();
    }
  });

  it('rejects an empty URL or a bad chain id', () => {
    expect(() => createProvider('http://x', 1, { timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createProvider('', 1)).toThrow(TypeError);
    expect(() => createProvider('http://x', 0)).toThrow(TypeError);
    expect(() => createProvider('http://x', 1.5)).toThrow(TypeError);
  });
});
