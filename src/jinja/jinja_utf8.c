/* jinja_utf8: UTF-8 decoding and the Unicode facts Python's str uses. */
#include "jinja_utf8.h"

#include "base/unicode.h"

uint32_t ju_decode(const char *str, size_t n, size_t *adv) {
  const int32_t cp = nc_utf8_decode(str, n, adv);
  return cp >= 0 ? (uint32_t)cp : (unsigned char)str[0];
}

size_t ju_encode(uint32_t cp, char *out) {
  return (size_t)nc_utf8_encode(cp, out);
}

size_t ju_count(const char *s, size_t n) {
  size_t count = 0, i = 0, adv;
  while (i < n) {
    ju_decode(s + i, n - i, &adv);
    i += adv;
    count++;
  }
  return count;
}

size_t ju_offset(const char *s, size_t n, size_t idx) {
  size_t i = 0, adv;
  while (idx > 0 && i < n) {
    ju_decode(s + i, n - i, &adv);
    i += adv;
    idx--;
  }
  return i;
}

bool ju_isspace(uint32_t cp) {
  switch (cp) {
  case 0x09:
  case 0x0A:
  case 0x0B:
  case 0x0C:
  case 0x0D:
  case 0x1C:
  case 0x1D:
  case 0x1E:
  case 0x1F:
  case 0x20:
  case 0x85:
  case 0xA0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202F:
  case 0x205F:
  case 0x3000: return true;
  default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool ju_isdigit(uint32_t cp) {
  return cp >= '0' && cp <= '9';
}

bool ju_iscased(uint32_t cp) {
  return cp == 0xDF || ju_upper(cp) != cp || ju_lower(cp) != cp;
}

bool ju_isalpha(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (cp == 0xAA || cp == 0xBA || cp == 0xB5 || cp == 0xDF) return true;
  if (cp >= 0xC0 && cp <= 0x24F) return cp != 0xD7 && cp != 0xF7;
  if (cp >= 0x370 && cp <= 0x52F) return ju_iscased(cp);
  /* CJK, kana, hangul and most other scripts are letters. */
  return (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x3400 && cp <= 0x9FFF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x0600 && cp <= 0x06FF) ||
         (cp >= 0x0900 && cp <= 0x097F);
}

uint32_t ju_upper(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (cp == 0xB5) return 0x39C;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp >= 0x100 && cp <= 0x137) return cp & ~1u;
  if (cp >= 0x139 && cp <= 0x148) return (cp & 1) ? cp : cp - 1;
  if (cp >= 0x14A && cp <= 0x177) return cp & ~1u;
  if (cp == 0x17A || cp == 0x17C || cp == 0x17E) return cp - 1;
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x3B1 && cp <= 0x3CB) return cp - 32;
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (cp >= 0x460 && cp <= 0x481) return cp & ~1u;
  if (cp >= 0x48A && cp <= 0x4BF) return cp & ~1u;
  if (cp >= 0x4D0 && cp <= 0x52F) return cp & ~1u;
  if (cp >= 0xFF41 && cp <= 0xFF5A) return cp - 32;
  return cp;
}

uint32_t ju_lower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x137) return cp | 1u;
  if (cp >= 0x139 && cp <= 0x148) return (cp & 1) ? cp + 1 : cp;
  if (cp >= 0x14A && cp <= 0x177) return cp | 1u;
  if (cp == 0x179 || cp == 0x17B || cp == 0x17D) return cp + 1;
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if (cp >= 0x460 && cp <= 0x481) return cp | 1u;
  if (cp >= 0x48A && cp <= 0x4BF) return cp | 1u;
  if (cp >= 0x4D0 && cp <= 0x52F) return cp | 1u;
  if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
  return cp;
}
