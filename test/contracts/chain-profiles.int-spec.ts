import { Contract, ContractFactory, TypedDataEncoder, Wallet } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { UsdcGateway } from '@lib/chain';
import { AppConfig } from '../../src/config/app-config';
import { CHAIN_PROFILES, type ChainName } from '../../src/config/chain-profiles';
import { ChainFixture, USDC } from './chain-fixture';

/**
 * The EIP-712 domain a chain profile makes us sign with equals the one a token deployed with the same
 * name/version reports (DESIGN §18): the profile's values go through AppConfig and the gateway exactly as in
 * the services, against a TestUSDC on anvil.
 */
describe('chain profiles against a deployed token', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await ChainFixture.start();
  });
  afterAll(async () => {
    await fx?.stop();
  });

  it.each(Object.keys(CHAIN_PROFILES) as ChainName[])('CHAIN=%s: our domain = the token’s eip712Domain() and DOMAIN_SEPARATOR()', async (chain) => {
    const { name, version } = CHAIN_PROFILES[chain].usdcDomain;
    const factory = new ContractFactory(TestUSDCArtifact.abi, TestUSDCArtifact.bytecode, fx.wallets.deployer);
    const token = (await (await factory.deploy(name, version)).waitForDeployment()) as Contract;
    const usdcAddress = await token.getAddress();

    // As a service would be configured on that chain, with only the token address moved to this anvil.
    const config = new AppConfig({ CHAIN: chain, CHAIN_ID: String(fx.chainId), USDC_ADDRESS: usdcAddress });
    expect(config.usdcDomain).toEqual({ name, version });
    const gateway = new UsdcGateway(fx.provider, { address: config.env.USDC_ADDRESS, domain: config.usdcDomain });
    const ours = await gateway.eip712Domain();

    const [, reportedName, reportedVersion, reportedChainId, reportedContract] = await token.eip712Domain();
    expect(ours).toEqual({ name: reportedName, version: reportedVersion, chainId: Number(reportedChainId), verifyingContract: reportedContract });
    expect(TypedDataEncoder.hashDomain(ours)).toBe(await token.DOMAIN_SEPARATOR());

    // And the token accepts an authorization signed under it.
    const payer = fx.wallets.buyer2 as Wallet;
    await (await token.connect(fx.wallets.deployer).getFunction('mint')(payer.address, 2n * USDC)).wait();
    const before = (await token.balanceOf(fx.wallets.seller.address)) as bigint;
    const validBefore = BigInt(await fx.now()) + 600n;
    const auth = await gateway.signTransferAuthorization(payer, { to: fx.wallets.seller.address, value: 1n * USDC, validBefore });
    await (await fx.wallets.relayer.sendTransaction({ to: usdcAddress, data: gateway.encodeTransferWithAuthorization(auth) })).wait();
    expect(await token.balanceOf(fx.wallets.seller.address)).toBe(before + 1n * USDC);
  });

  it('a domain that differs from the token’s (mainnet name on the testnet token) yields signatures the token refuses', async () => {
    const factory = new ContractFactory(TestUSDCArtifact.abi, TestUSDCArtifact.bytecode, fx.wallets.deployer);
    const token = (await (await factory.deploy('USDC', '2')).waitForDeployment()) as Contract;
    const usdcAddress = await token.getAddress();
    const gateway = new UsdcGateway(fx.provider, { address: usdcAddress, domain: CHAIN_PROFILES.base.usdcDomain });
    expect(TypedDataEncoder.hashDomain(await gateway.eip712Domain())).not.toBe(await token.DOMAIN_SEPARATOR());
    const payer = fx.wallets.buyer2 as Wallet;
    await (await token.connect(fx.wallets.deployer).getFunction('mint')(payer.address, 2n * USDC)).wait();
    const validBefore = BigInt(await fx.now()) + 600n;
    const auth = await gateway.signTransferAuthorization(payer, { to: fx.wallets.seller.address, value: 1n * USDC, validBefore });
    const data = gateway.encodeTransferWithAuthorization(auth);
    const refused = await fx.provider.call({ from: fx.wallets.relayer.address, to: usdcAddress, data }).then(
      () => null,
      (err: { data?: string }) => token.interface.parseError(err.data ?? '0x')?.name,
    );
    expect(refused).toBe('InvalidAuthorizationSignature');
  });
});
