import { Foundation1795300000000 } from './1795300000000-Foundation';
import { Webhooks1795300003000 } from './1795300003000-Webhooks';
import { Escrow1795300005000 } from './1795300005000-Escrow';
import { Offerings1795300010000 } from './1795300010000-Offerings';
import { Invoices1795300011000 } from './1795300011000-Invoices';

/** Every migration in order; listed as classes (no globs) so the same list works in dist and jest. */
export const MIGRATIONS = [Foundation1795300000000, Webhooks1795300003000, Escrow1795300005000, Offerings1795300010000, Invoices1795300011000];
