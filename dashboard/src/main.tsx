import { render } from 'preact';
import { LocationProvider, Route, Router } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { BASE, Layout } from './components/layout.js';
import { Loading } from './components/ui.js';
import { type Me, MeContext } from './me.js';
import { CustomerPage } from './pages/customer.js';
import { CustomersPage } from './pages/customers.js';
import { EventTypesPage } from './pages/event-types.js';
import { KeysPage } from './pages/keys.js';
import { NotFoundPage } from './pages/not-found.js';
import { OverviewPage } from './pages/overview.js';
import { RewardsPage } from './pages/rewards.js';
import { SettingsPage } from './pages/settings.js';
import { SignIn } from './pages/sign-in.js';
import { TiersPage } from './pages/tiers.js';
import { WebhooksPage } from './pages/webhooks.js';
import { session } from './session.js';
import './styles.css';

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checking, setChecking] = useState(session.key() !== null);

  // A key kept from earlier in this tab: still valid?
  useEffect(() => {
    if (!session.key()) return;
    api.get<Me>('/me').then(
      (found) => {
        setMe(found);
        setChecking(false);
      },
      (error) => {
        if (error instanceof ApiError && error.status === 401) session.signOut();
        setChecking(false);
      },
    );
  }, []);

  if (checking) return <Loading />;
  if (!me) {
    return (
      <SignIn
        onSignedIn={(key, found) => {
          session.signIn(key);
          setMe(found);
        }}
      />
    );
  }
  const signOut = () => {
    session.signOut();
    setMe(null);
  };
  return (
    <MeContext.Provider value={me}>
      <Layout onSignOut={signOut}>
        <Router>
          <Route path={`${BASE}`} component={OverviewPage} />
          <Route path={`${BASE}/`} component={OverviewPage} />
          <Route path={`${BASE}/customers`} component={CustomersPage} />
          <Route path={`${BASE}/customers/:id`} component={CustomerPage} />
          <Route path={`${BASE}/rewards`} component={RewardsPage} />
          <Route path={`${BASE}/tiers`} component={TiersPage} />
          <Route path={`${BASE}/event-types`} component={EventTypesPage} />
          <Route path={`${BASE}/webhooks`} component={WebhooksPage} />
          <Route path={`${BASE}/keys`} component={KeysPage} />
          <Route path={`${BASE}/settings`} component={SettingsPage} />
          <Route default component={NotFoundPage} />
        </Router>
      </Layout>
    </MeContext.Provider>
  );
}

render(
  <LocationProvider>
    <App />
  </LocationProvider>,
  document.getElementById('app')!,
);
