# openwop_router's SQL scripts, for Makefile (router_dir = router/) and
# router/Makefile (router_dir empty), included before PGXS; src_dir is the
# including Makefile's source directory (a VPATH build reads from there).
#
# A script with a template, sql/X.sql.in, is made from it by wrappers.awk
# (each function routed by tenant is one @routed line there).  A released
# script is frozen: it must come out byte for byte as it was released, as
# sql/released.sha256 records it.  The other scripts are installed as they are.

router_src   = $(src_dir)$(router_dir)
router_built = $(patsubst $(router_src)%.in,$(router_dir)%,$(wildcard $(router_src)sql/openwop_router--*.sql.in))
DATA_built  += $(router_built)
DATA        += $(filter-out $(router_built),$(patsubst $(router_src)%,$(router_dir)%,$(sort $(wildcard $(router_src)sql/openwop_router--*.sql))))

$(router_dir)sql/%.sql: $(router_src)sql/%.sql.in $(router_src)wrappers.awk $(router_src)sql/released.sha256
	@mkdir -p $(@D)
	awk -f $(router_src)wrappers.awk $< >$@.new || { rm -f $@.new; exit 1; }
	@sum=$$(sed -n 's/  $(notdir $@)$$//p' $(router_src)sql/released.sha256); \
	if [ -n "$$sum" ] && [ "$$(sha256sum <$@.new | cut -c1-64)" != "$$sum" ]; then \
		echo "$@ is not the script released as $(notdir $@) (sql/released.sha256)" >&2; \
		rm -f $@.new; exit 1; \
	fi
	mv $@.new $@
