/**
 * A fault port for the crash proofs (PaymentFaults, RelayerFaults, X402Faults): while `at` names a
 * recovery point, `hit` throws there, as if the process died right after committing it. Passed to
 * `createTestAppWith` / `startRelayerWorker` as the port's override.
 */
export class FaultSwitch<P extends string> {
  at: P | null = null;

  hit(point: P): void {
    if (this.at === point) throw new Error(`fault injected at ${point}`);
  }
}
