# The web page served by nucleus serve (GET /): web/ embedded in the binary
# by scripts/embed_web.py (no build step for the page itself).
WEB_SRCS := web/index.html web/app.js web/app.css
WEB_GEN := $(BUILDDIR)/gen/web_assets.c
TOOL_OBJS += $(BUILDDIR)/gen/web_assets.o

$(WEB_GEN): $(WEB_SRCS) scripts/embed_web.py
	@mkdir -p $(dir $@)
	python3 scripts/embed_web.py $@ $(WEB_SRCS)

$(BUILDDIR)/gen/web_assets.o: $(WEB_GEN) tools/server/http/web_assets.h
	$(CC) $(CFLAGS) -Itools/server -c $< -o $@
