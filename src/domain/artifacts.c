/*-------------------------------------------------------------------------
 *
 * artifacts.c
 *	  Approvals bound to what was approved.  The engine tells a pending
 *	  approval gate which version of its artifact it shows (a digest it
 *	  computes); each counted vote records the digest current when it was
 *	  cast, and a new digest voids every counted vote bound to another
 *	  (approvals.c), so the gate needs its quorum again.  A voter may say
 *	  which digest it looked at (openwop.artifact_digest, If-Match over
 *	  HTTP): any other is 412 precondition_failed.
 *
 * The gate's digest lives on its open row (openwop.open_interrupts), each
 * change and the votes it voided in openwop.artifact_changes; the decision
 * records them under the vendor hatch of interrupt.resolved
 * ("openwop-artifact").  Nothing goes into the spec's closed payloads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "base/base.h"
#include "store/store.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#define DIGEST_MAX 256
#define REASON_MAX 4096

static char *ow_artifact_digest_seen = NULL;

void
ow_define_artifact_settings(void)
{
	DefineCustomStringVariable("openwop.artifact_digest",
							   "The digest of the artifact the voter looked at: its vote counts only on that version.",
							   "One digest, or ETags as an If-Match header lists them; a gate showing another is 412 precondition_failed. Empty: no condition. Set it for the transaction (SET LOCAL).",
							   &ow_artifact_digest_seen,
							   "",
							   PGC_USERSET,
							   0,
							   NULL, NULL, NULL);
}

/* A digest as artifact_changed takes it: 1 to 256 characters of A-Z a-z 0-9 . _ ~ : + / = - */
void
ow_check_artifact_digest(const char *digest)
{
	const char *c;

	if (digest == NULL || digest[0] == '\0' || strlen(digest) > DIGEST_MAX)
		ow_validation_error("artifactDigest", "artifact_digest must have 1 to %d characters", DIGEST_MAX);
	for (c = digest; *c; c++)
		if (!(isalnum((unsigned char) *c) || strchr("._~:+/=-", *c) != NULL))
			ow_validation_error("artifactDigest",
								"\"%s\" is not a digest (1 to %d characters of A-Z a-z 0-9 . _ ~ : + / = -)",
								ow_echo(digest), DIGEST_MAX);
}

void
ow_check_artifact_reason(const char *reason)
{
	if (reason && strlen(reason) > REASON_MAX)
		ow_validation_error("reason", "reason must have at most %d bytes", REASON_MAX);
}

/* Does one entity tag of an If-Match list (W/ and quotes taken off) name digest? */
static bool
tag_names(const char *tag, int len, const char *digest)
{
	while (len > 0 && (*tag == ' ' || *tag == '\t'))
		tag++, len--;
	while (len > 0 && (tag[len - 1] == ' ' || tag[len - 1] == '\t'))
		len--;
	if (len >= 2 && tag[0] == 'W' && tag[1] == '/')
		tag += 2, len -= 2;
	if (len >= 2 && tag[0] == '"' && tag[len - 1] == '"')
		tag++, len -= 2;
	return len == 1 && tag[0] == '*' ? true :
		digest != NULL && (int) strlen(digest) == len && strncmp(tag, digest, len) == 0;
}

/*
 * The voter said which artifact it looked at (openwop.artifact_digest):
 * unless the gate shows that one now (current; NULL: the engine told none),
 * 412 precondition_failed.  "*" holds whatever the gate shows.
 */
void
ow_artifact_precondition(const char *interrupt_id, const char *run_id, const char *node_id,
						 const char *current)
{
	const char *seen = ow_artifact_digest_seen;
	const char *p;
	OwDetails	d;

	if (seen == NULL || seen[0] == '\0')
		return;
	for (p = seen;;)
	{
		const char *comma = strchr(p, ',');
		int			len = comma ? (int) (comma - p) : (int) strlen(p);

		if (tag_names(p, len, current))
			return;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	ow_details_init(&d);
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_details_str(&d, "artifactDigest", current);
	ow_details_str(&d, "seen", seen);
	ow_raise(OW_PRECONDITION_FAILED, &d,
			 "Look at the artifact the gate shows now, then answer again with its digest.",
			 current ? "the artifact of the gate of node \"%s\" in run \"%s\" is no longer the one the voter looked at"
			 : "the gate of node \"%s\" in run \"%s\" was told no artifact digest, so the one the voter looked at cannot be checked",
			 node_id, run_id);
}

/*
 * The engine tells the pending approval gate interrupt_id of node_id (its
 * digest now current, NULL when never told) that it shows digest, because
 * reason; who is the caller.  The same digest changes nothing (*changed
 * false); a new one is the gate's from now on, voids every counted vote
 * bound to another, and is recorded with the votes it voided.  Returns
 * those votes, [{voter, digest, action}].
 */
Jsonb *
ow_artifact_change(OwRun *run, const char *interrupt_id, const char *node_id, const char *current,
				   const char *digest, const char *reason, const OwSubject *who, bool *changed)
{
	static OwQuery show = {
		"UPDATE openwop.open_interrupts SET artifact_digest = $3"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		" RETURNING payload",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_UPDATE_RETURNING
	};
	static OwQuery record = {
		"INSERT INTO openwop.artifact_changes"
		" (tenant, interrupt_id, change, run_id, node_id, digest, previous_digest, reason, changed_by, voided)"
		" SELECT $1, $2, COALESCE(pg_catalog.max(change), 0) OPERATOR(pg_catalog.+) 1, $3, $4, $5, $6, $7, $8, $9"
		"   FROM openwop.artifact_changes"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
		9, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID},
		SPI_OK_INSERT
	};
	Datum		args[9];
	char		nulls[9];
	Jsonb	   *voided;
	Jsonb	   *payload;

	*changed = current == NULL || strcmp(current, digest) != 0;
	if (!*changed)
		return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("[]")));

	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(digest);
	if (ow_exec(&show, args, NULL, false, 0) != 1)
		elog(ERROR, "could not find the open row of interrupt \"%s\"", interrupt_id);
	payload = ow_col_jsonb(0, 1);
	voided = ow_approval_void_votes(run, interrupt_id, digest, reason);

	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(node_id);
	args[4] = CStringGetTextDatum(digest);
	args[5] = current ? CStringGetTextDatum(current) : (Datum) 0;
	nulls[5] = current ? ' ' : 'n';
	args[6] = reason ? CStringGetTextDatum(reason) : (Datum) 0;
	nulls[6] = reason ? ' ' : 'n';
	args[7] = JsonbPGetDatum(ow_subject_jsonb(who));
	args[8] = JsonbPGetDatum(voided);
	(void) ow_exec(&record, args, nulls, false, 0);
	if (ow_outbox_on())
	{
		int			i;

		/* each voter whose vote was voided is asked to vote again */
		for (i = 0; i < (int) JsonContainerSize(&voided->root); i++)
		{
			JsonbContainer *v = getIthJsonbValueFromContainer(&voided->root, i)->val.binary.data;
			char	   *voter = owj_string(owj_get_container(v, "voter"));
			OwJson		j;

			ow_notice_detail(&j, node_id, owj_get(payload, "data")->val.binary.data, true);
			owj_str(&j, "digest", digest);
			if (reason)
				owj_str(&j, "reason", reason);
			(void) ow_notify_voter(run, interrupt_id, "voided", voter, NULL, owj_end(&j));
		}
	}
	/*
	 * The run row is written too: a REPEATABLE READ voter whose snapshot
	 * predates the change then fails 40001 at the run lock, instead of
	 * counting its vote on the version its snapshot shows.
	 */
	ow_save_run(run);
	return voided;
}

/*
 * What a decided gate that was told its artifact records under the vendor
 * hatch: {digest, changes, voided}, the digest it was decided on, how many
 * times it changed, every vote a change voided and why
 * ([{voter, digest, action, change, reason}]).
 */
Jsonb *
ow_artifact_record(const char *tenant, const char *interrupt_id, const char *digest)
{
	static OwQuery q = {
		"SELECT COALESCE(pg_catalog.jsonb_agg(v OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object("
		"                    'change', c.change, 'reason', c.reason) ORDER BY c.change, v OPERATOR(pg_catalog.->>) 'voter')"
		"                FILTER (WHERE v IS NOT NULL), '[]')"
		"  FROM openwop.artifact_changes c"
		"  LEFT JOIN LATERAL pg_catalog.jsonb_array_elements(c.voided) v ON true"
		" WHERE c.tenant OPERATOR(pg_catalog.=) $1 AND c.interrupt_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	static OwQuery changes = {
		"SELECT pg_catalog.count(*) FROM openwop.artifact_changes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[2];
	Jsonb	   *voided;
	int64		n;
	OwJson		j;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	if (ow_exec(&q, args, NULL, false, 1) != 1)
		elog(ERROR, "could not read the artifact changes of interrupt \"%s\"", interrupt_id);
	voided = ow_col_jsonb(0, 1);
	if (ow_exec(&changes, args, NULL, false, 1) != 1)
		elog(ERROR, "could not count the artifact changes of interrupt \"%s\"", interrupt_id);
	n = ow_col_int64(0, 1);
	owj_begin(&j);
	owj_str(&j, "digest", digest);
	owj_jsonb(&j, "voided", voided);
	owj_int(&j, "changes", n);
	return owj_end(&j);
}
