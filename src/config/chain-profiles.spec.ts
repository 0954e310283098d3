import { AppConfig } from './app-config';
import { applyChainProfile, CHAIN_PROFILES } from './chain-profiles';
import { validateEnv } from './env.schema';

describe('chain profiles (DESIGN §18)', () => {
  it.each([
    ['base', 8453, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 'USD Coin'],
    ['base-sepolia', 84532, '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'USDC'],
    ['anvil', 31337, '0x5FbDB2315678afecb367f032d93F642f64180aa3', 'USD Coin'],
  ])('CHAIN=%s fills chain id %d, USDC %s and the domain (%s, "2")', (chain, chainId, usdc, name) => {
    const config = new AppConfig({ CHAIN: chain });
    expect(config.env.CHAIN_ID).toBe(chainId);
    expect(config.env.USDC_ADDRESS).toBe(usdc);
    expect(config.usdcDomain).toEqual({ name, version: '2' });
  });

  it('an explicitly set variable wins over its profile', () => {
    const env = validateEnv({ CHAIN: 'base', USDC_ADDRESS: '0x0000000000000000000000000000000000000001', USDC_EIP712_NAME: 'X', USDC_EIP712_VERSION: '9' });
    expect(env.CHAIN_ID).toBe(8453);
    expect(env.USDC_ADDRESS).toBe('0x0000000000000000000000000000000000000001');
    expect([env.USDC_EIP712_NAME, env.USDC_EIP712_VERSION]).toEqual(['X', '9']);
    expect(validateEnv({ CHAIN: 'base-sepolia', CHAIN_ID: '31337' }).CHAIN_ID).toBe(31337);
  });

  it('no CHAIN: the domain is not configured (the gateway reads it from the token), nothing else changes', () => {
    const config = new AppConfig({});
    expect(config.usdcDomain).toBeUndefined();
    expect(config.env.CHAIN_ID).toBe(31337);
    expect(applyChainProfile({ PORT: '1' })).toEqual({ PORT: '1' });
  });

  it('an unknown CHAIN and a half-set domain are refused, naming the variables', () => {
    expect(() => validateEnv({ CHAIN: 'ethereum' })).toThrow(/CHAIN="ethereum"/);
    expect(() => validateEnv({ USDC_EIP712_NAME: 'USDC' })).toThrow(/USDC_EIP712_NAME and USDC_EIP712_VERSION/);
  });

  it('outside the local chain a profile still demands real secrets', () => {
    expect(() => validateEnv({ CHAIN: 'base' }, ['DEPLOYER_PRIVATE_KEY'])).toThrow(/DEPLOYER_PRIVATE_KEY must be set/);
  });

  it('profiles hold checksummed addresses', async () => {
    const { getAddress } = await import('ethers');
    for (const p of Object.values(CHAIN_PROFILES)) expect(getAddress(p.usdcAddress)).toBe(p.usdcAddress);
  });
});
