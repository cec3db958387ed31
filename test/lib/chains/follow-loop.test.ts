import { Logger } from '@aws-lambda-powertools/logger';
import { followChain } from '../../../lib/chains/follow-loop';
import { devChainSettings } from '../../../lib/config/chains';
import * as chainStore from '../../../lib/store/chains';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

const CHAIN_ID = '31342';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore();

test('a head the store fails to record is a warning, not a failed step, and is recorded at the next try', async () => {
  // The one write of the loop that the store cannot be made to refuse alone for real.
  const recordChainHead = jest.spyOn(chainStore, 'recordChainHead').mockRejectedValueOnce(Object.assign(new Error('Internal error'), { name: 'InternalServerError' }));
  const log = new Logger({ logLevel: 'SILENT' });
  const warn = jest.spyOn(log, 'warn');
  const error = jest.spyOn(log, 'error');
  const stop = new AbortController();
  const following = followChain({ ...devChainSettings(CHAIN_ID, chain.rpcUrl()), pollIntervalMs: 50 }, { leaseMs: 30_000, signal: stop.signal, log, queue: NO_QUEUE });
  try {
    while (!(await chainStore.getChainHead(CHAIN_ID))) await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    stop.abort();
    await following;
    recordChainHead.mockRestore();
  }
  expect(warn).toHaveBeenCalledWith('chain head not recorded; recorded again at the next try', { chainId: CHAIN_ID, error: 'InternalServerError: Internal error' });
  expect(error).not.toHaveBeenCalled();
}, 30_000);
