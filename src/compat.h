/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every difference between the PostgreSQL majors the library builds
 *	  against (15, 17 and 18), in one place, below every layer.  The code
 *	  is written against the newest API; what an older server lacks is
 *	  supplied here.  Macros only, so that this header brings no server
 *	  header into a file that does not use the call (executor types stay
 *	  in the store).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_COMPAT_H
#define OW_COMPAT_H

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "openwop_interrupt builds against PostgreSQL 15, 16, 17 and 18"
#endif

/*
 * 18 declares a function that does not return with a prefix (C11's
 * _Noreturn) and dropped pg_attribute_noreturn(); GCC and clang take the
 * attribute in the prefix position too.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * 16 replaced the checks per kind of object (pg_database_ownercheck,
 * pg_proc_aclcheck, ...) with object_ownercheck and object_aclcheck;
 * before 16 the class (a constant) picks the old check, and a class not
 * listed here does not compile.  Callers include utils/acl.h and the
 * catalog's _d.h header.
 */
#if PG_VERSION_NUM < 160000
#define object_ownercheck(classid, objectid, roleid) \
	OW_OWNERCHECK_##classid((objectid), (roleid))
#define OW_OWNERCHECK_DatabaseRelationId pg_database_ownercheck
#define OW_OWNERCHECK_ExtensionRelationId pg_extension_ownercheck
#define object_aclcheck(classid, objectid, roleid, mode) \
	OW_ACLCHECK_##classid((objectid), (roleid), (mode))
#define OW_ACLCHECK_ProcedureRelationId pg_proc_aclcheck
#endif

/*
 * The "extra" a GUC check hook hands over is freed by the GUC machinery:
 * with free() before 16, in its own memory context (guc_free) from 16.
 * NULL when out of memory.  Callers include utils/guc.h.
 */
#if PG_VERSION_NUM < 160000
#define ow_guc_malloc(size) malloc(size)
#define ow_guc_free(ptr) free(ptr)
#else
#define ow_guc_malloc(size) guc_malloc(LOG, (size))
#define ow_guc_free(ptr) guc_free(ptr)
#endif

/*
 * A JSON lexer over a string: 17's takes a context to fill (NULL:
 * allocate one).
 */
#if PG_VERSION_NUM < 170000
#define ow_json_lexer(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen((char *) (json), (len), (encoding), (need_escapes))
#else
#define ow_json_lexer(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen(NULL, (json), (len), (encoding), (need_escapes))
#endif

/*
 * This backend's slot among the MaxBackends regular backends, 0-based, or
 * -1 when it has none: 17 numbers every process (MyProcNumber, auxiliary
 * ones after the regular backends); before, a backend had a 1-based
 * MyBackendId.  Callers include storage/procnumber.h (17) or
 * storage/backendid.h (before), through OW_PROC_NUMBER_HEADER.
 */
#if PG_VERSION_NUM < 170000
#define OW_PROC_NUMBER_HEADER "storage/backendid.h"
#define ow_my_backend_slot() \
	(MyBackendId == InvalidBackendId ? -1 : (int) MyBackendId - 1)
#else
#define OW_PROC_NUMBER_HEADER "storage/procnumber.h"
#define ow_my_backend_slot() \
	(MyProcNumber == INVALID_PROC_NUMBER ? -1 : (int) MyProcNumber)
#endif

/* ----------
 * The executor's row-level calls the store makes directly (store/rowstore.c).
 *
 * 16: each relation in the range table has its RTEPermissionInfo, which
 * ExecGetUpdatedCols reads when an update inserts index entries (logical
 * apply builds them the same way).  18: ExecInitRangeTable is told which
 * relations survived pruning (all of ours).
 * ----------
 */
#if PG_VERSION_NUM < 160000
#define ow_init_range_table(estate, rtable) ExecInitRangeTable((estate), (rtable))
#else
#if PG_VERSION_NUM < 180000
#define OW_EXEC_INIT_RANGE_TABLE(estate, rtable, perminfos) \
	ExecInitRangeTable((estate), (rtable), (perminfos))
#else
#define OW_EXEC_INIT_RANGE_TABLE(estate, rtable, perminfos) \
	ExecInitRangeTable((estate), (rtable), (perminfos), \
					   bms_add_range(NULL, 1, list_length(rtable)))
#endif
#define ow_init_range_table(estate, rtable) \
	do { \
		List	   *ow_perminfos_ = NIL; \
		ListCell   *ow_rte_; \
		foreach(ow_rte_, (rtable)) \
			addRTEPermissionInfo(&ow_perminfos_, lfirst_node(RangeTblEntry, ow_rte_)); \
		OW_EXEC_INIT_RANGE_TABLE((estate), (rtable), ow_perminfos_); \
	} while (0)
#endif

/* 16 added onlySummarizing (false: an insert maintains every index) */
#if PG_VERSION_NUM < 160000
#define ow_insert_index_tuples(rri, slot, estate, noDupErr, specConflict) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, (noDupErr), (specConflict), NIL)
#else
#define ow_insert_index_tuples(rri, slot, estate, noDupErr, specConflict) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, (noDupErr), (specConflict), NIL, false)
#endif

/* 18 added the tuple being updated (none: ours is an insert) */
#if PG_VERSION_NUM < 180000
#define ow_check_index_constraints(rri, slot, estate, conflictTid) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflictTid), NIL)
#else
#define ow_check_index_constraints(rri, slot, estate, conflictTid) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflictTid), NULL, NIL)
#endif

/* 18 added the scan's instrumentation (none) */
#if PG_VERSION_NUM < 180000
#define ow_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), 0)
#else
#define ow_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0)
#endif

#endif							/* OW_COMPAT_H */
