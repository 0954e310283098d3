/**
 * The console's one bundled script (docs/architecture.md §19): the router. Reads the page's
 * `data-page` and runs that page (pages/*), which talk only to this origin through ./api
 * (`@pcp/sdk` for `/api/v1/*` as a `console` principal, `/console/api/*` for the session).
 * Everything the API returns is written as text (never as HTML).
 */
import { attempt, content, data } from './dom';
import { agentsPage } from './pages/agents';
import { keysPage, oauthClientsPage } from './pages/keys';
import { listPage } from './pages/lists';
import { overviewPage } from './pages/overview';
import { homePage, signInPage, wireSignOut } from './pages/session';
import { verificationPage } from './pages/verification';
import { webhooksPage } from './pages/webhooks';
import { statementPage } from './statement';

async function start(): Promise<void> {
  wireSignOut();
  switch (data.page) {
    case 'signin': return signInPage();
    case 'home': return homePage();
    case 'overview': return overviewPage();
    case 'keys': return keysPage();
    case 'oauth-clients': return oauthClientsPage();
    case 'agents': return agentsPage();
    case 'webhooks': return webhooksPage();
    case 'verification': return verificationPage();
    case 'statement': return statementPage(content());
    case 'checkouts':
    case 'escrows':
    case 'invoices':
    case 'offerings':
      return listPage(data.page);
  }
}

void attempt(start).finally(() => (document.getElementById('page')!.dataset.ready = 'true'));
