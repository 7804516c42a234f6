import { useState } from 'preact/hooks';

/** Copies text: the Clipboard API where the page is a secure context, else a selected textarea and execCommand. */
async function copy(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the old way
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  return ok;
}

/** A secret the API shows once (a new key, a webhook signing secret), with a copy button. */
export function SecretOnce({ label, value, onDismiss }: { label: string; value: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  return (
    <section class="card secret" role="region" aria-label={label}>
      <h2>{label}</h2>
      <p>This is shown once: copy it now and keep it somewhere safe. It cannot be shown again.</p>
      <div class="secret-row">
        <output class="mono secret-value" aria-label="Secret value">
          {value}
        </output>
        <button type="button" class="primary" onClick={async () => setCopied(await copy(value))}>
          Copy
        </button>
      </div>
      {copied !== null && (
        <p role="status" class={copied ? 'success' : 'form-error'}>
          {copied ? 'Copied to the clipboard.' : 'Could not copy: select the text and copy it by hand.'}
        </p>
      )}
      <button type="button" class="ghost" onClick={onDismiss}>
        I have saved it
      </button>
    </section>
  );
}
