/**
 * The production binding of the crash-proof fault ports (`PaymentFaults`, `RelayerFaults`,
 * `X402Faults`): a service calls `hit(point)` right after it commits a recovery point
 * (docs/architecture.md §5), and in production nothing happens there. The crash tests override the
 * port through Nest's testing module with one that throws at a chosen point, as if the process died
 * right after the commit (STYLE.md: test seams are injected by tests, not fields of production classes).
 */
export const NO_FAULTS: { hit(point: string): void } = { hit: () => undefined };
