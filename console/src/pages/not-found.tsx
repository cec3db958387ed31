import { paths } from '../paths';
import { PageHeader } from '../ui/components';

export function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no console page at this address. <a href={paths.overview}>Go to the overview</a>.
      </p>
    </>
  );
}
