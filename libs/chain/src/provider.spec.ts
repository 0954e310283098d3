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

  it('rejects an empty URL or a bad chain id', () => {
    expect(() => createProvider('', 1)).toThrow(TypeError);
    expect(() => createProvider('http://x', 0)).toThrow(TypeError);
    expect(() => createProvider('http://x', 1.5)).toThrow(TypeError);
  });
});
