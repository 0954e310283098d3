import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { pageBundle } from './page-shell';

/**
 * The hosted pages' one script, `/assets/pay.js?v=<content hash>` (docs/architecture.md §16),
 * bundled by esbuild at build time (scripts/build-pages.mjs). Pages reference it by its content
 * hash, so it is cached for a year as immutable; 404 when the build has not produced it. Also
 * `/favicon.ico` (204), so a page load logs no failed request.
 */
@ApiExcludeController()
@Controller()
export class PageAssetsController {
  @Get('assets/pay.js')
  @Public()
  script(@Res() res: Response): void {
    const bundle = pageBundle();
    if (!bundle) {
      res.status(404).type('text/plain').send('pay.js is not built: run npm run build');
      return;
    }
    res
      .set({ 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff', ETag: `"${bundle.hash}"` })
      .type('application/javascript; charset=utf-8')
      .send(bundle.body);
  }

  /** Browsers ask every page's origin for an icon; the pages have none (204, cached a day, no 404 in the console). */
  @Get('favicon.ico')
  @Public()
  favicon(@Res() res: Response): void {
    res.set('Cache-Control', 'public, max-age=86400').status(204).end();
  }
}
