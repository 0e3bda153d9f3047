// Liveness and readiness for orchestrators: /healthz answers while the process serves HTTP;
// /readyz only while trees are loaded, workers are up and the service is not draining.

import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../context.js';

export const healthRoutes: FastifyPluginAsync<{ ctx: ServiceContext }> = async (app, { ctx }) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (ctx.phase !== 'ready') return reply.code(503).send({ status: ctx.phase });
    return { status: 'ready', sessions: ctx.sessions.size, agents: ctx.pool.agentCount(), workers: ctx.pool.workerCount };
  });
};
