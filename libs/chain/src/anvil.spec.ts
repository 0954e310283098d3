import { HDNodeWallet } from 'ethers';
import { ANVIL_KEYS, ANVIL_MNEMONIC, ANVIL_ROLES, anvilBinaryPath, anvilKey } from './anvil';
import { existsSync } from 'node:fs';

describe('anvil constants', () => {
  it('ANVIL_KEYS are accounts 0..9 of the default mnemonic', () => {
    const derived = ANVIL_KEYS.map((_, i) => HDNodeWallet.fromPhrase(ANVIL_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).privateKey);
    expect(derived).toEqual([...ANVIL_KEYS]);
  });

  it('roles map to distinct keys', () => {
    expect(anvilKey('deployer')).toBe(ANVIL_KEYS[0]);
    expect(anvilKey('demoSeller')).toBe(ANVIL_KEYS[5]);
    expect(new Set(Object.values(ANVIL_ROLES)).size).toBe(Object.keys(ANVIL_ROLES).length);
  });

  it('finds the platform binary of @foundry-rs/anvil', () => {
    expect(existsSync(anvilBinaryPath())).toBe(true);
  });
});
