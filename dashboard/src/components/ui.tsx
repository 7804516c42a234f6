import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { ApiError } from '../api.js';
import { formatAbsolute, formatNumber, formatRelative } from '../format.js';
import type { SubmitError } from '../submission.js';

/** A timestamp as people read it ("3 minutes ago"), the exact UTC time on hover and for machines. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={formatAbsolute(iso)}>
      {formatRelative(iso)}
    </time>
  );
}

export const Num = ({ value }: { value: number | null | undefined }) => <span class="num">{formatNumber(value)}</span>;

/** An error about the whole form, shown inside it, announced to screen readers. */
export function FormError({ error }: { error: SubmitError | Error | null | undefined }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.code : null;
  return (
    <p class="form-error" role="alert">
      {error.message}
      {code && <span class="code"> ({code})</span>}
    </p>
  );
}

/** A labelled input with the API's complaint about it (if any) right below it. */
/** The input attributes the forms use. */
interface InputProps {
  type?: 'text' | 'email' | 'tel' | 'url' | 'number' | 'datetime-local';
  required?: boolean;
  min?: number;
  max?: number;
  step?: number;
  inputMode?: 'numeric' | 'decimal' | 'text';
  placeholder?: string;
  value?: string;
}

export function Field(props: {
  label: string;
  name: string;
  error?: SubmitError | null | undefined;
  hint?: string;
  /** A control of its own (a select, a textarea), given the id to use. */
  control?: ((id: string, invalid: boolean) => ComponentChildren) | undefined;
} & InputProps) {
  const { label, name, error, hint, control, value, ...input } = props;
  const id = useId();
  const message = error instanceof ApiError ? error.about(name) : undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {control ? control(id, !!message) : <input {...({ id, name, defaultValue: value, 'aria-invalid': message ? true : undefined, 'aria-describedby': message ? `${id}-error` : undefined, ...input } as object)} />}
      {hint && <small class="hint">{hint}</small>}
      {message && (
        <small class="field-error" id={`${id}-error`}>
          {message}
        </small>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <p>{children}</p>}
    </div>
  );
}

export function Loading() {
  return (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  );
}

/** What a page shows when its data could not be loaded (a permission the key lacks, a server down). */
export function LoadError({ error }: { error: Error }) {
  return (
    <p class="form-error" role="alert">
      {error.message}
    </p>
  );
}

export function ReadOnlyNote({ what }: { what: string }) {
  return <p class="note">Signed in with a public key: {what} needs a private key.</p>;
}
