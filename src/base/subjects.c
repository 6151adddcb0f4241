/*-------------------------------------------------------------------------
 *
 * subjects.c
 *	  OpenWOP Subjects ("The Subject is the owner"): who acts, as {issuer,
 *	  subjectId, tenant, lane, kind}; the subjects this host vouches for
 *	  itself, their JSON forms, refs and the eligibility match.  Pure
 *	  functions of their arguments.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"

void
ow_set_subject(OwSubject *s, const char *issuer, const char *subject_id, const char *tenant,
			const char *lane, const char *kind)
{
	s->issuer = pstrdup(issuer);
	s->subject_id = pstrdup(subject_id);
	s->tenant = pstrdup(tenant);
	s->lane = lane;
	s->kind = kind;
}

/* The host itself, deciding by its own clock (deadlines). */
void
ow_host_subject(OwSubject *s, const char *tenant)
{
	ow_set_subject(s, OW_ISSUER_HOST, "deadline", tenant, "workload", "workload");
}

/* The host itself, confirming a credential its OAuth callback obtained. */
void
ow_credential_host_subject(OwSubject *s, const char *tenant)
{
	ow_set_subject(s, OW_ISSUER_HOST, "credential", tenant, "workload", "workload");
}

/*
 * The holder of an interrupt token: the principal the token was minted for
 * (the token is a key this host issued for that one decision), or, for a
 * token that names none, whoever holds the link.
 */
void
ow_token_subject(OwSubject *s, const char *tenant, const char *principal)
{
	if (principal)
		ow_set_subject(s, OW_ISSUER_TOKEN, principal, tenant, "api-key", "user");
	else
		ow_set_subject(s, OW_ISSUER_ANON, OW_TOKEN_PRINCIPAL, tenant, "anonymous", "anonymous");
}

/* The Subject's members, in jsonb's key order (see json.c). */
void
owj_subject_members(OwJson *j, const OwSubject *s)
{
	owj_str(j, "kind", s->kind);
	owj_str(j, "lane", s->lane);
	owj_str(j, "issuer", s->issuer);
	owj_str(j, "tenant", s->tenant);
	owj_str(j, "subjectId", s->subject_id);
}

/* The Subject object {issuer, subjectId, tenant, lane, kind} under key. */
void
owj_subject(OwJson *j, const char *key, const OwSubject *s)
{
	owj_begin_object(j, key);
	owj_subject_members(j, s);
	owj_end_object(j);
}

/*
 * The legacy subject of a principal recorded before this host stamped
 * Subjects ({"id": ...}): issuer urn:openwop:legacy, lane api-key, kind
 * user, as OpenWOP's legacy subject rule says.
 */
void
owj_legacy_subject(OwJson *j, const char *key, const char *id, const char *tenant)
{
	OwSubject	s;

	ow_set_subject(&s, "urn:openwop:legacy", id, tenant, "api-key", "user");
	owj_subject(j, key, &s);
}

Jsonb *
ow_subject_jsonb(const OwSubject *s)
{
	OwJson		j;

	owj_begin(&j);
	owj_subject_members(&j, s);
	return owj_end(&j);
}

/*
 * How the holder of a subject with this issuer was authenticated, as a
 * receipt names it: a SQL login (session), a token minted for a principal,
 * a bare token, the host's own clock or callback, a recorded legacy
 * subject, or else a JWT (the issuer is its iss claim, or ours when it has
 * none).
 */
const char *
ow_issuer_authentication(const char *issuer)
{
	if (strcmp(issuer, OW_ISSUER_SESSION) == 0)
		return "sql-login";
	if (strcmp(issuer, OW_ISSUER_TOKEN) == 0)
		return "interrupt-token";
	if (strcmp(issuer, OW_ISSUER_ANON) == 0)
		return "bare-token";
	if (strcmp(issuer, OW_ISSUER_HOST) == 0)
		return "host";
	if (strcmp(issuer, "urn:openwop:legacy") == 0)
		return "legacy";
	return "jwt";
}

/*
 * The issuer-qualified ref of a subject, "<issuer>/<subjectId>".  Not the
 * "<issuer>:<subjectId>" of the reference host: issuers and subjectIds may
 * both hold ":", so that form can name two subjects ("a:b" + "c" and "a" +
 * "b:c"); a subjectId never holds "/".
 */
char *
ow_subject_ref(const OwSubject *s)
{
	return psprintf("%s/%s", s->issuer, s->subject_id);
}

/*
 * The subjectId a ref ("<issuer>/<subjectId>", or a subjectId) names,
 * under whatever issuer: one person, as a bare approversList entry is.
 */
const char *
ow_ref_subject_id(const char *ref)
{
	const char *slash = strrchr(ref, '/');

	return slash ? slash + 1 : ref;
}

/*
 * Does an eligibility ref (an approversList entry, a group member) name
 * this subject?  A ref without "/" is a subjectId, under any issuer the
 * host trusts; "<issuer>/<subjectId>" pins the issuer.
 */
bool
ow_subject_matches(const OwSubject *s, const char *ref)
{
	const char *slash = strrchr(ref, '/');

	if (slash == NULL)
		return strcmp(ref, s->subject_id) == 0;
	return strlen(s->issuer) == (size_t) (slash - ref) &&
		strncmp(ref, s->issuer, slash - ref) == 0 && strcmp(slash + 1, s->subject_id) == 0;
}

