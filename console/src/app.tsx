import { LocationProvider, Route, Router } from 'preact-iso';
import { ApiKeysPage } from './pages/api-keys';
import { NotFound } from './pages/not-found';
import { OverviewPage } from './pages/overview';
import { SharedSecretPage } from './pages/secret';
import { SignIn } from './pages/sign-in';
import { DeliveryPage } from './pages/webhook/delivery';
import { CreateWebhookPage, EditWebhookPage } from './pages/webhook-form';
import { WebhooksPage } from './pages/webhooks';
import { WebhookPages } from './pages/webhook/webhook-pages';
import { paths, routePattern } from './paths';
import { useSession } from './session';
import { Layout } from './ui/layout';

/** Every page but sign-in needs a key; a deep link opened signed out comes back after sign-in. */
export function App() {
  const { key, signedOutBecause } = useSession();
  if (!key) return <SignIn because={signedOutBecause} />;
  return (
    <LocationProvider>
      <Layout>
        <Router>
          <Route path={paths.overview} component={OverviewPage} />
          <Route path={paths.webhooks} component={WebhooksPage} />
          <Route path={paths.newWebhook} component={CreateWebhookPage} />
          <Route path={routePattern('webhooks/:id/edit')} component={EditWebhookPage} />
          <Route path={paths.secret} component={SharedSecretPage} />
          <Route path={paths.apiKeys} component={ApiKeysPage} />
          {/* The webhook's pages match any id: fixed paths such as webhooks/new go above them. */}
          <Route path={routePattern('webhooks/:id')} component={WebhookPages} />
          <Route path={routePattern('webhooks/:id/addresses')} component={WebhookPages} />
          <Route path={routePattern('webhooks/:id/deliveries')} component={WebhookPages} />
          <Route path={routePattern('webhooks/:id/backfills')} component={WebhookPages} />
          <Route path={routePattern('webhooks/:id/deliveries/:messageId')} component={DeliveryPage} />
          <Route default component={NotFound} />
        </Router>
      </Layout>
    </LocationProvider>
  );
}
