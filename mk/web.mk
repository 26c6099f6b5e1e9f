# The web page served by nucleus serve (GET /): web/ embedded in the binary
# by scripts/embed_web.py (no build step for the page itself), with the
# libraries it renders Markdown with, as Debian installs them (scripts/setup.sh:
# libjs-marked, node-dompurify, libjs-highlight.js), served under /lib/.
WEB_SRCS := web/index.html web/app.js web/app.css
WEB_LIB_MARKED := /usr/share/javascript/marked/marked.min.js
WEB_LIB_PURIFY := /usr/share/nodejs/dompurify/dist/purify.min.js
WEB_LIB_HLJS := /usr/share/javascript/highlight.js/highlight.min.js
WEB_LIB_HLCSS := /usr/share/javascript/highlight.js/styles/github.css
WEB_LIBS := $(WEB_LIB_MARKED) $(WEB_LIB_PURIFY) $(WEB_LIB_HLJS) $(WEB_LIB_HLCSS)
WEB_GEN := $(BUILDDIR)/gen/web_assets.c
TOOL_OBJS += $(BUILDDIR)/gen/web_assets.o

$(WEB_LIBS):
	@echo "error: $@ is missing: the web page embeds it; install libjs-marked" \
	  "node-dompurify libjs-highlight.js (scripts/setup.sh)" >&2
	@exit 1

$(WEB_GEN): $(WEB_SRCS) $(WEB_LIBS) scripts/embed_web.py
	@mkdir -p $(dir $@)
	python3 scripts/embed_web.py $@ $(WEB_SRCS) /lib/marked.js=$(WEB_LIB_MARKED) \
	  /lib/purify.js=$(WEB_LIB_PURIFY) /lib/highlight.js=$(WEB_LIB_HLJS) \
	  /lib/highlight.css=$(WEB_LIB_HLCSS)

$(BUILDDIR)/gen/web_assets.o: $(WEB_GEN) tools/server/http/web_assets.h
	$(CC) $(CFLAGS) -Itools/server -c $< -o $@
