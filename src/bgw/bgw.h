/*-------------------------------------------------------------------------
 *
 * bgw/bgw.h
 *	  The workers and the hook: the timeout pass, the database worker, the
 *	  launcher, the DDL hook and what the monitoring views show.  What
 *	  module.c uses of it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_BGW_H
#define OW_BGW_H

/* ----------
 * timeouts.c: sweep() and the database worker's timeout pass, and whether
 * its database is the one served or a copy.  Setting:
 * openwop.sweeper_interval.
 * ----------
 */
extern void ow_define_timeout_worker_settings(void);

/* ----------
 * dbworker.c: the database worker (relay and deadlines of one database).
 * launcher.c: the launcher, which keeps one running in every database
 * with the extension.  ddl.c: the ProcessUtility hook that pauses a
 * database for DDL and tells the launcher of CREATE and DROP EXTENSION.
 * monitor.c: what openwop.workers and openwop.stats show.
 * ----------
 */
extern void ow_install_ddl_hook(void);

#endif							/* OW_BGW_H */
