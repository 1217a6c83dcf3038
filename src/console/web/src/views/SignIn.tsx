// The sign-in form: an access key (and optional session token) and a region. The key is traded for a
// one-hour session (sts.ts); only the session is kept.
import { useState } from "preact/hooks";
import { setSession } from "../lib/session";
import { signIn } from "../lib/sts";
import { ErrorBox, Field } from "../lib/ui";

export function SignIn({ notice }: { notice?: string }) {
  const [keyId, setKeyId] = useState("");
  const [secret, setSecret] = useState("");
  const [token, setToken] = useState("");
  const [region, setRegion] = useState("us-east-1");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await signIn(keyId.trim(), secret.trim(), token.trim(), region.trim() || "us-east-1");
      setSecret("");
      setSession(s);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin" tabIndex={-1}>
      <h1>Paddock console</h1>
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h2 id="signin-title">Sign in with an access key</h2>
        {notice ? <p class="notice" role="status">{notice}</p> : null}
        <Field id="key-id" label="Access key ID">
          <input id="key-id" name="key-id" autoComplete="username" required spellcheck={false}
            value={keyId} onInput={(e) => setKeyId(e.currentTarget.value)} />
        </Field>
        <Field id="secret" label="Secret access key">
          <input id="secret" name="secret" type="password" autoComplete="current-password" required
            value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
        </Field>
        <Field id="session-token" label="Session token (optional)">
          <input id="session-token" name="session-token" type="password" autoComplete="off"
            value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </Field>
        <Field id="region" label="Region">
          <input id="region" name="region" spellcheck={false}
            value={region} onInput={(e) => setRegion(e.currentTarget.value)} />
        </Field>
        <p class="muted small">
          The key is exchanged for a one-hour session (STS GetSessionToken); only that session is kept,
          in this tab's session storage. A key with a session token is used as it is.
        </p>
        <button type="submit" class="primary" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
        <ErrorBox error={error} what="Sign-in" />
      </form>
    </main>
  );
}
