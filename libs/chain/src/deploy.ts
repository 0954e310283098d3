import { ContractFactory, Wallet, getAddress, getBytes, hexlify, type Provider } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact, type ContractArtifact } from '@lib/contracts';

/** Inputs of deployLocalContracts: addresses checksummed or not, `mint` amounts in USDC base units. */
export interface DeployLocalContractsOptions {
  provider: Provider;
  deployerKey: string;
  termsSigner: string;
  arbiter: string;
  mint?: ReadonlyArray<{ to: string; amount: bigint }>;
  /** EIP-712 domain of the test token; default ("USD Coin", "2"), the domain of USDC on Base mainnet. */
  usdcDomain?: { name: string; version: string };
}

/** Where the local contracts live; `deployBlock` is the escrow's deployment block (indexer start). */
export interface LocalContracts {
  usdcAddress: string;
  escrowAddress: string;
  deployBlock: number;
}

/**
 * Deploys TestUSDC and CheckoutEscrow(usdc, termsSigner, admin = deployer, arbiter) and mints test USDC
 * (docs/architecture.md §7, local chains only). Sends with explicit consecutive nonces and waits for every receipt;
 * throws the ethers error of the first failing transaction.
 */
export async function deployLocalContracts(options: DeployLocalContractsOptions): Promise<LocalContracts> {
  const deployer = new Wallet(options.deployerKey, options.provider);
  let nonce = await options.provider.getTransactionCount(deployer.address, 'pending');

  const domain = options.usdcDomain ?? { name: 'USD Coin', version: '2' };
  const usdc = await new ContractFactory(TestUSDCArtifact.abi, TestUSDCArtifact.bytecode, deployer).deploy(domain.name, domain.version, {
    nonce: nonce++,
  });
  const usdcAddress = await usdc.getAddress();
  const escrow = await new ContractFactory(CheckoutEscrowArtifact.abi, CheckoutEscrowArtifact.bytecode, deployer).deploy(
    usdcAddress,
    getAddress(options.termsSigner),
    deployer.address,
    getAddress(options.arbiter),
    { nonce: nonce++ },
  );
  const mints = [];
  for (const { to, amount } of options.mint ?? []) {
    mints.push(await usdc.getFunction('mint').send(getAddress(to), amount, { nonce: nonce++ }));
  }

  await usdc.waitForDeployment();
  await escrow.waitForDeployment();
  const escrowReceipt = await escrow.deploymentTransaction()!.wait();
  for (const tx of mints) await tx.wait();
  return {
    usdcAddress: getAddress(usdcAddress),
    escrowAddress: getAddress(await escrow.getAddress()),
    deployBlock: escrowReceipt!.blockNumber,
  };
}

/** Inputs of deployEscrowContract: the token (any chain's USDC) and the two roles; addresses any case. */
export interface DeployEscrowOptions {
  provider: Provider;
  deployerKey: string;
  usdcAddress: string;
  termsSigner: string;
  arbiter: string;
  /** Bound on the receipt wait, ms (default 5 min: a public chain may be slow, never unbounded). */
  timeoutMs?: number;
}

/** Where the escrow landed: checksummed address, deployment block (ESCROW_DEPLOY_BLOCK), transaction hash. */
export interface DeployedEscrow {
  escrowAddress: string;
  deployBlock: number;
  txHash: string;
  admin: string;
}

/**
 * Deploys CheckoutEscrow(usdc, termsSigner, admin = deployer, arbiter) alone, for `cli chain:deploy` against any
 * RPC (DESIGN §18). Refuses a `usdcAddress` without code (a wrong address on this chain). Waits for one
 * confirmation, bounded by `timeoutMs`.
 * @throws Error when the token address holds no code, the deployment reverts, or the wait times out.
 */
export async function deployEscrowContract(options: DeployEscrowOptions): Promise<DeployedEscrow> {
  const deployer = new Wallet(options.deployerKey, options.provider);
  const usdcAddress = getAddress(options.usdcAddress);
  if ((await options.provider.getCode(usdcAddress)) === '0x') {
    throw new Error(`USDC_ADDRESS ${usdcAddress} has no contract code on this chain`);
  }
  const escrow = await new ContractFactory(CheckoutEscrowArtifact.abi, CheckoutEscrowArtifact.bytecode, deployer).deploy(
    usdcAddress,
    getAddress(options.termsSigner),
    deployer.address,
    getAddress(options.arbiter),
  );
  const tx = escrow.deploymentTransaction()!;
  const receipt = await tx.wait(1, options.timeoutMs ?? 300_000);
  if (!receipt || receipt.status !== 1) throw new Error(`escrow deployment ${tx.hash} failed`);
  return {
    escrowAddress: getAddress(await escrow.getAddress()),
    deployBlock: receipt.blockNumber,
    txHash: tx.hash,
    admin: deployer.address,
  };
}

/**
 * Whether the code at both addresses is exactly this build's TestUSDC and CheckoutEscrow runtime code
 * (immutable slots masked), i.e. a running chain can be reused without redeploying.
 */
export async function hasLocalContracts(
  provider: Provider,
  addresses: { usdcAddress: string; escrowAddress: string },
): Promise<boolean> {
  const [usdcCode, escrowCode] = await Promise.all([
    provider.getCode(addresses.usdcAddress),
    provider.getCode(addresses.escrowAddress),
  ]);
  return codeMatches(usdcCode, TestUSDCArtifact) && codeMatches(escrowCode, CheckoutEscrowArtifact);
}

/** True when `code` (0x hex runtime bytecode) equals the artifact's deployed bytecode outside immutable ranges. */
export function codeMatches(code: string, artifact: ContractArtifact): boolean {
  const actual = getBytes(code);
  const expected = getBytes(artifact.deployedBytecode);
  if (actual.length !== expected.length || actual.length === 0) return false;
  for (const { start, length } of artifact.immutableReferences) {
    actual.fill(0, start, start + length);
    expected.fill(0, start, start + length);
  }
  return hexlify(actual) === hexlify(expected);
}
