import { name, version } from '../../package.json';

/** What every notification's user-agent says: the service and its version. */
export const USER_AGENT = `${name}/${version}`;
