import * as z from './zod';
import { addresses, nextPageToken, pageSize, pageToken } from './fields';

/** The body of adding or removing addresses: the hosted API's `{"addresses": [...]}`. */
export const addressesBody = z.strictObject({ addresses });
export type AddressesInput = z.infer<typeof addressesBody>;

export const listAddressesQuery = z.strictObject({ pageToken, pageSize });
export type ListAddressesQuery = z.infer<typeof listAddressesQuery>;

export const addressList = z.object({
  addresses: z.array(z.string()).describe('In address order (lower-case hexadecimal)'),
  totalAddresses: z.number().int().describe("All of the webhook's addresses, exact after every completed add or remove"),
  nextPageToken,
});
export type AddressList = z.infer<typeof addressList>;
