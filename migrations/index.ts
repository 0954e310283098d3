import { Foundation1795300000000 } from './1795300000000-Foundation';

/** Every migration in order; listed as classes (no globs) so the same list works in dist and jest. */
export const MIGRATIONS = [Foundation1795300000000];
