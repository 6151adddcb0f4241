/*-------------------------------------------------------------------------
 *
 * auth/auth.h
 *	  Who is calling, the call bracket of an API function and becoming the
 *	  extension owner, and the signing keys.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_AUTH_H
#define OW_AUTH_H

#include "base/base.h"

/* ----------
 * caller.c: who is calling (a Subject in a tenant, with or without the
 * approvals:respond scope).  Settings: openwop.tenant,
 * openwop.default_tenant, openwop.tenant_claim, openwop.jwt_session_role,
 * openwop.bound_tenant, openwop.approver_role, openwop.forwarding_role,
 * openwop.forwarded_caller, and request.jwt.claims and request.headers
 * themselves.
 * ----------
 */

/* The caller of an API function, decided once, before it becomes the owner. */
typedef struct OwCaller
{
	OwSubject	subject;		/* who, in which tenant (subject.tenant) */
	Oid			login;			/* session_user of a SQL session, else InvalidOid */
	Jsonb	   *claims;			/* verified claims of a request session, else NULL */
	char	   *forwarded_by;	/* login of the forwarder that speaks for it, else NULL */
	bool		forwarded_scope;	/* a forwarded caller holds approvals:respond */
	uint32		forwarded_privileges;	/* OW_PRIV_* the router granted a forwarded caller */
} OwCaller;

/*
 * Two privileges that are grants on a single server, which a router decides
 * for its own caller and forwards (a forwarded caller does not inherit them
 * from the router's login): minting resolve tokens (openwop.token_issuer_role)
 * and reading event logs (EXECUTE on openwop.events()).
 */
#define OW_PRIV_MINT_RESOLVE_TOKENS 0x01
#define OW_PRIV_READ_EVENT_LOGS 0x02
extern char *ow_token_issuer_role;
extern bool ow_role_issues_tokens(void);
extern bool ow_role_reads_event_logs(void);

/* The scope an approver's caller must hold to resolve. */
#define OW_SCOPE "approvals:respond"

extern bool ow_preloaded;		/* set by _PG_init */
extern void ow_define_caller_settings(void);
extern void ow_define_request_settings(void);
extern void ow_caller(OwCaller *c);
extern bool ow_acts_in_every_tenant(const OwCaller *c);
extern void ow_require_every_tenant(const OwCaller *c, const char *what);
extern bool ow_has_scope(const OwCaller *c);
extern bool ow_request_headers_untampered(void);
extern void ow_check_scope(const OwCaller *c);
extern const char *ow_scope_hint(const OwCaller *c);


/* ----------
 * call.c: the call bracket of an API function, and becoming the
 * extension owner around table access.
 * ----------
 */

/* Statements run as the extension owner, with restricted security context. */
typedef struct OwPriv
{
	Oid			save_userid;
	int			save_sec_context;
	int			guc_level;		/* of the owner's search_path */
} OwPriv;

extern void ow_become_owner(OwPriv *priv);
extern void ow_restore_user(OwPriv *priv);
extern bool ow_is_admin(void);
extern void ow_require_admin(const char *what);

/*
 * The bracket of an API function: ow_call_begin decides who is calling
 * (before anything runs as the owner), connects SPI and becomes the owner
 * (ow_call_enter: the same once call->caller is decided);
 * ow_call_end goes back to the caller's role and memory context, where
 * the result is built; ow_call_finish releases SPI.
 */
typedef struct OwCall
{
	MemoryContext callerctx;
	OwCaller	caller;
	OwPriv		priv;
} OwCall;

extern void ow_refuse_read_only(const char *function);
extern void ow_call_begin(OwCall *call);
extern void ow_call_enter(OwCall *call);
extern void ow_call_end(OwCall *call);
extern void ow_call_finish(OwCall *call);

/* ----------
 * keyring.c: signing keys, and processes' memory out of reach.  Settings:
 * openwop.token_max_ttl, openwop.key_encryption_key_command,
 * openwop.key_encryption_key_file, openwop.protect_backend_memory,
 * openwop.protect_server_memory.
 * ----------
 */
/* The key that signs new tokens. */
typedef struct OwSigningKey
{
	char	   *kid;
	bytea	   *secret;			/* plain, decrypted if stored encrypted */
	int32		longest_ttl;	/* longest lifetime it has signed for, in seconds */
} OwSigningKey;

extern int	ow_token_max_ttl;
extern void ow_define_keyring_settings(void);
extern void ow_protect_memory(void);
extern void ow_install_memory_guards(void);
extern bytea *ow_verification_secret(const char *kid);
extern void ow_signing_key(OwSigningKey *key);
extern void ow_note_lifetime(const OwSigningKey *key, int32 lifetime);

#endif							/* OW_AUTH_H */
