export * from './usdc';
export * from './fees';
