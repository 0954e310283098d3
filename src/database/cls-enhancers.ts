import type { INestApplication } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';

/** True for a plain object whose only own property is the function `method` (what nestjs-cls registers unmounted). */
function isBareEnhancer(enhancer: unknown, method: 'canActivate' | 'intercept'): boolean {
  if (enhancer === null || typeof enhancer !== 'object' || Object.getPrototypeOf(enhancer) !== Object.prototype) return false;
  const keys = Object.keys(enhancer);
  return keys.length === 1 && keys[0] === method && typeof (enhancer as Record<string, unknown>)[method] === 'function';
}

/**
 * Removes the global guard and interceptor that nestjs-cls registers as no-ops when none of its
 * enhancers is mounted (nestjs-cls 6, `ClsRootModule.clsGuardFactory` / `clsInterceptorFactory`:
 * `{ canActivate: () => true }` and `{ intercept: (_, next) => next.handle() }`). The
 * DatabaseModule mounts none (docs/architecture.md §2: `withTransaction` opens its own CLS
 * context), so these would only put every route through Nest's guard step and its RxJS interceptor
 * chain for nothing (docs/decisions.md, "The runner's cost"). Our own global guards stay.
 * Call after the application is created (its global enhancers are applied then) and before it is
 * initialised (when routes bind their enhancers).
 * @returns how many enhancers were removed (0, 1 or 2).
 */
export function dropIdleClsEnhancers(app: INestApplication): number {
  const config = app.get(ApplicationConfig);
  let removed = 0;
  for (const [list, method] of [
    [config.getGlobalGuards(), 'canActivate'],
    [config.getGlobalInterceptors(), 'intercept'],
  ] as const) {
    const index = (list as unknown[]).findIndex((e) => isBareEnhancer(e, method));
    if (index >= 0) {
      (list as unknown[]).splice(index, 1);
      removed++;
    }
  }
  return removed;
}
