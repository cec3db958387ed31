import * as z from './zod';
import { addresses, pageSize, pageToken } from './fields';

/** The body of adding or removing addresses: the hosted API's `{"addresses": [...]}`. */
export const addressesBody = z.strictObject({ addresses });
export type AddressesInput = z.infer<typeof addressesBody>;

export const listAddressesQuery = z.strictObject({ pageToken, pageSize });
export type ListAddressesQuery = z.infer<typeof listAddressesQuery>;

export const addressList = z.object({
  /** In address order (lower-case hexadecimal). */
  addresses: z.array(z.string()),
  /** All of the webhook's addresses, exact after every completed add or remove. */
  totalAddresses: z.number().int(),
  /** Absent on the last page. */
  nextPageToken: z.string().optional(),
});
export type AddressList = z.infer<typeof addressList>;
