import { ContractFactory, Wallet, getAddress, getBytes, hexlify, type Provider } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact, type ContractArtifact } from '@lib/contracts';

/** Inputs of deployLocalContracts: addresses checksummed or not, `mint` amounts in USDC base units. */
export interface DeployLocalContractsOptions {
  provider: Provider;
  deployerKey: string;
  termsSigner: string;
  arbiter: string;
  mint?: ReadonlyArray<{ to: string; amount: bigint }>;
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

  const usdc = await new ContractFactory(TestUSDCArtifact.abi, TestUSDCArtifact.bytecode, deployer).deploy({ nonce: nonce++ });
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
