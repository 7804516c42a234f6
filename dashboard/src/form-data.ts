/** The form's non-empty text fields, trimmed, as a JSON body (numbers where `numeric` names them). */
export function formBody(form: HTMLFormElement, numeric: string[] = []): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of new FormData(form)) {
    const text = String(value).trim();
    if (text === '') continue;
    body[name] = numeric.includes(name) ? Number(text) : text;
  }
  return body;
}

/** Parses a JSON textarea, naming the field when it is not JSON (shown next to it like an API error). */
export function parseJsonField(text: string, field: string): { value?: unknown; error?: string } {
  if (text.trim() === '') return {};
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `${field} is not valid JSON: ${(e as Error).message}` };
  }
}
