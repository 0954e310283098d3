import type { ModuleRef } from '@nestjs/core';

/**
 * A port resolved on first use instead of at construction (docs/architecture.md, "A circle between
 * modules"): the reader names an abstract class, and the module providing it depends on the reader's,
 * so it cannot be a constructor dependency. Resolved once, on the first call, through the app's
 * `ModuleRef` with `strict: false` (any module); providers are singletons, so the first answer stands.
 *
 * `moduleRef` is a getter so the port can be a field initializer (`latePort(() => this.moduleRef, T)`),
 * which runs before constructor parameter properties are assigned.
 *
 * @returns a function giving the provider of `token`.
 * @throws Nest's UnknownElementException (on the call, not here) when no loaded module provides `token`.
 */
export function latePort<T>(moduleRef: () => ModuleRef, token: abstract new (...args: never[]) => T): () => T {
  let port: T | undefined;
  return () => (port ??= moduleRef().get<T>(token, { strict: false }));
}
