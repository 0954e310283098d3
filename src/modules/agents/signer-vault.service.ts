import { Injectable } from '@nestjs/common';
import { Wallet } from 'ethers';
import { AppConfig } from '../../config/app-config';
import { SecretBox } from '../../common/crypto/secret-box';
import { AgentsRepository } from './agents.repository';

/**
 * Session signer keys (docs/architecture.md §13): generated per agent, sealed with
 * SIGNER_ENCRYPTION_KEY (AES-256-GCM via {@link SecretBox}, purpose "agent-signer", bound to the agent
 * id), opened only to sign. A key is never logged, rendered or returned.
 */
@Injectable()
export class SignerVault {
  private sealingBox: SecretBox | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: AgentsRepository,
  ) {}

  /** Built on first use, so a process that never touches a signer never loads SIGNER_ENCRYPTION_KEY. */
  private get box(): SecretBox {
    this.sealingBox ??= new SecretBox(this.config.secret('SIGNER_ENCRYPTION_KEY'), 'agent-signer');
    return this.sealingBox;
  }

  /** A fresh signer for `agentId`: its address and the sealed key to store. */
  generate(agentId: string): { address: string; sealed: string } {
    const wallet = Wallet.createRandom();
    return { address: wallet.address, sealed: this.box.seal(wallet.privateKey, agentId) };
  }

  /**
   * The agent's signer wallet (not connected to a provider).
   * @throws Error when the agent has no signer or the sealed key does not open under this key and agent.
   */
  async wallet(agentId: string): Promise<Wallet> {
    const sealed = await this.repo.sealedKey(agentId);
    if (!sealed) throw new Error(`agent ${agentId} has no session signer`);
    return new Wallet(this.box.open(sealed, agentId));
  }
}
