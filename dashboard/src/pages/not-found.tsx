import { Empty } from '../components/ui.js';

export function NotFoundPage() {
  return <Empty title="There is no such page.">Pick a page from the menu.</Empty>;
}
