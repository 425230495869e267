/*
 * Compiled core of the ftrace text reader (analysis.ingest.ftrace._parse).
 *
 * Ahead-of-time C, built with the package (pyproject.toml, setuptools): no JIT, so the
 * first `mmlab ingest` of an environment costs what every later one does (issue 23).
 * Every function works on whole lines of one block, releases the GIL while it runs (the
 * reader parses two blocks at once) and returns bytearrays the caller views as NumPy arrays.
 *
 *   text_shape(buf)                   (lines, ascii): a last line without "\n" counts
 *   lines(buf)                        (starts, ends) of every line
 *   scan(buf[, lines])                (starts, ends, kind, fields): each line classified,
 *                                     its header read (the layouts: layout.py's docstring)
 *   group_hashes(hashes)              (first, ids): np.unique(return_index, return_inverse)
 *   tokenize(buf, pstart, pend, mode) payload tokens of some lines (the general path)
 *   string_views(buf, s, e, valid)    Arrow string_view buffers of byte spans
 *   emit(...)                         every event line's common columns and, tokenized on
 *                                     the way, the fields of its event's plan, as Arrow
 *                                     buffers (columns.py)
 *
 * Payload rules (tokenize_line): words split on runs of spaces; key=value words give a
 * field, a value glued to a comma loses it, a value opening "(" runs to ")"; free text
 * (shrink_slab) is phrases ended by an integer (after gfp_flags, by any word); in
 * shrink_slab the first two words are the shrinker symbol and pointer (keys -2, -3).
 *
 * Integer accumulators that the text could overflow are unsigned (wrapping, never
 * undefined); their values are used only where a length check proves them exact.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef int64_t i64;
typedef uint64_t u64;
typedef uint32_t u32;
typedef uint8_t u8;

/* Line kinds. */
enum { EVENT, HEADER, BLANK, LOST, STACK, UNPARSED };
/* Unparsed reasons (indexes into reader.REASONS). */
enum { R_LAYOUT = 1, R_TIMESTAMP = 2, R_EVENT = 3 };
/* Columns of the int64 [lines, SCAN_COLUMNS] fields array scan() fills. */
enum {
    COMM_START, COMM_END, /* comm span */
    PID, TGID, CPU,       /* tgid, cpu -1 when the layout has none; cpu of a lost marker */
    TS,                   /* ns (or a raw counter clock); a lost marker's count (-1 unknown) */
    NAME_START, NAME_END, /* event-name span */
    PAYLOAD_START,        /* the payload ends at the line end */
    REASON,               /* unparsed reason */
    COUNTER_CLOCK,        /* 1 when the timestamp is a bare counter */
    IRQ_START, IRQ_END,   /* irq-flags span (-1 none) */
    INSTANCE_END,         /* ":" ending a trace-cmd buffer name (0 none) */
    NAME_HASH,            /* FNV-1a of the event name */
    SCAN_COLUMNS
};
/* Field kinds of a plan (tokenizer.field_plan). */
enum { K_INT, K_STR, K_FLAGS };

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL
#define VIEW_INLINE 12

static inline int isdig(u8 c) { return c >= '0' && c <= '9'; }

static inline int isname(u8 c)
{
    return isdig(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static inline int starts_with(const u8 *buf, i64 s, i64 e, const char *lit, i64 n)
{
    return e - s >= n && memcmp(buf + s, lit, (size_t)n) == 0;
}

static inline u64 fnv1a(const u8 *buf, i64 s, i64 e)
{
    u64 h = FNV_OFFSET;
    for (i64 i = s; i < e; i++)
        h = (h ^ buf[i]) * FNV_PRIME;
    return h;
}

static inline void set_bit(u8 *bits, i64 i) { bits[i >> 3] |= (u8)(1u << (i & 7)); }

/* ------------------------------------------------------------------------------------ */
/* Line header                                                                           */

/* secs[.frac] filling buf[s:e] → ns (or the raw integer of a counter clock). */
static int parse_ts(const u8 *buf, i64 s, i64 e, i64 *ts, int *counter)
{
    i64 secs = 0, i = s;
    while (i < e && isdig(buf[i])) {
        if (i - s >= 18)
            return 0;
        secs = secs * 10 + (buf[i] - '0');
        i++;
    }
    if (i == s)
        return 0;
    if (i == e) {
        *ts = secs;
        *counter = 1;
        return 1;
    }
    if (buf[i] != '.')
        return 0;
    i++;
    i64 frac = 0;
    int nd = 0;
    while (i < e && isdig(buf[i])) {
        if (nd < 9) {
            frac = frac * 10 + (buf[i] - '0');
            nd++;
        }
        i++;
    }
    if (i != e || nd == 0 || secs > 9000000000LL)
        return 0;
    while (nd < 9) {
        frac *= 10;
        nd++;
    }
    *ts = secs * 1000000000LL + frac;
    *counter = 0;
    return 1;
}

/* From buf[i:], "[system:]event: payload": the name's span and hash, the payload start. */
static int parse_event(const u8 *buf, i64 i, i64 e, i64 *o)
{
    while (i < e && buf[i] == ' ')
        i++;
    if (i < e && buf[i] == '<') /* "<stack trace>", "<user stack trace>" */
        return STACK;
    if (i + 2 < e && buf[i] == '(' && buf[i + 1] == '+') {
        /* trace-cmd report --ts-diff: "(+N)", ns since the previous event, is dropped */
        i64 j = i + 2;
        while (j < e && isdig(buf[j]))
            j++;
        if (j > i + 2 && j < e && buf[j] == ')') {
            i = j + 1;
            while (i < e && buf[i] == ' ')
                i++;
        }
    }
    i64 ns = i;
    u64 h = FNV_OFFSET;
    while (i < e && (isname(buf[i]) || buf[i] == ':')) {
        if (buf[i] == ':' && (i + 1 == e || buf[i + 1] == ' '))
            break;
        if (buf[i] == ':') { /* a system prefix ("vmscan:") is dropped */
            ns = i + 1;
            h = FNV_OFFSET;
        } else {
            h = (h ^ buf[i]) * FNV_PRIME;
        }
        i++;
    }
    if (i == e || i == ns || buf[i] != ':') {
        o[REASON] = R_EVENT;
        return UNPARSED;
    }
    o[NAME_START] = ns;
    o[NAME_END] = i;
    o[NAME_HASH] = (i64)h;
    i++;
    while (i < e && buf[i] == ' ')
        i++;
    o[PAYLOAD_START] = i;
    return EVENT;
}

/* Digits ending at buf[j] (inclusive), read leftwards: the value (-1 past 10 digits) and
 * in *first the index of the first digit (j itself when too long). */
static i64 parse_int_back(const u8 *buf, i64 lo, i64 j, i64 *first)
{
    i64 v = 0, mul = 1;
    while (j >= lo && isdig(buf[j])) {
        if (mul > 1000000000LL) {
            *first = j;
            return -1;
        }
        v += (buf[j] - '0') * mul;
        mul *= 10;
        j--;
    }
    *first = j + 1;
    return v;
}

/* A line whose cpu column "[N]" opens at b: kind, or -1 to try the next "[". */
static int try_bracket(const u8 *buf, i64 s, i64 e, i64 b, i64 *o)
{
    i64 j = b + 1;
    u64 cpu = 0;
    while (j < e && isdig(buf[j])) {
        cpu = cpu * 10 + (u64)(buf[j] - '0');
        j++;
    }
    if (j == b + 1 || j >= e || buf[j] != ']' || j - b > 7)
        return -1;
    i64 after = j + 1;
    /* Leftwards: optional (tgid), pid digits, then '-' (ftrace) or ' ' (perf). */
    j = b - 1;
    while (j >= s && buf[j] == ' ')
        j--;
    i64 tgid = -1, first;
    if (j >= s && buf[j] == ')') {
        i64 p = j - 1;
        while (p >= s && buf[p] != '(') {
            if (!(isdig(buf[p]) || buf[p] == ' ' || buf[p] == '-'))
                return -1;
            p--;
        }
        if (p < s)
            return -1;
        if (isdig(buf[j - 1]))
            tgid = parse_int_back(buf, p + 1, j - 1, &first);
        j = p - 1;
        while (j >= s && buf[j] == ' ')
            j--;
    }
    if (j < s || !isdig(buf[j]))
        return -1;
    i64 pid = parse_int_back(buf, s, j, &first);
    if (pid < 0)
        return -1;
    j = first - 1;
    if (j >= s && buf[j] == '/') { /* perf "pid/tid": the pid is the thread group id */
        tgid = parse_int_back(buf, s, j - 1, &first);
        j = first - 1;
    }
    if (j < s)
        return -1;
    i64 ce;
    if (buf[j] == '-') {
        ce = j;
    } else if (buf[j] == ' ') {
        ce = j;
        while (ce > s && buf[ce - 1] == ' ')
            ce--;
    } else {
        return -1;
    }
    o[COMM_START] = s;
    o[COMM_END] = ce;
    o[PID] = pid;
    o[TGID] = tgid;
    o[CPU] = (i64)cpu;
    /* Rightwards: [flags] timestamp':' */
    i64 i = after;
    while (i < e && buf[i] == ' ')
        i++;
    i64 t0 = i, te;
    while (i < e && buf[i] != ' ')
        i++;
    if (i > t0 && buf[i - 1] == ':') {
        o[IRQ_START] = -1;
        o[IRQ_END] = -1;
        te = i - 1;
    } else {
        o[IRQ_START] = t0;
        o[IRQ_END] = i;
        while (i < e && buf[i] == ' ')
            i++;
        t0 = i;
        while (i < e && buf[i] != ' ')
            i++;
        if (i == t0 || buf[i - 1] != ':') {
            o[REASON] = R_TIMESTAMP;
            return -1;
        }
        te = i - 1;
    }
    i64 ts;
    int counter;
    if (!parse_ts(buf, t0, te, &ts, &counter)) {
        /* A later "[N]" may still be the real cpu column (a comm holding brackets). */
        o[REASON] = R_TIMESTAMP;
        return -1;
    }
    o[TS] = ts;
    o[COUNTER_CLOCK] = counter;
    return parse_event(buf, i, e, o);
}

/* Mail-reformatted "<ts> <comm>-<pid> <event>: payload": kind or -1. */
static int try_ts_first(const u8 *buf, i64 s, i64 e, i64 *o)
{
    i64 i = s;
    while (i < e && buf[i] != ' ')
        i++;
    i64 te = (i > s && buf[i - 1] == ':') ? i - 1 : i;
    i64 ts;
    int counter;
    if (!parse_ts(buf, s, te, &ts, &counter) || counter)
        return -1;
    /* The event: the word before the first ": " (or ':' at the line end). */
    i64 c = i;
    while (c < e && !(buf[c] == ':' && (c + 1 == e || buf[c + 1] == ' ')))
        c++;
    if (c == e)
        return -1;
    i64 w = c - 1;
    while (w > i && buf[w] != ' ')
        w--;
    if (w <= i)
        return -1;
    i64 j = w - 1;
    while (j > i && buf[j] == ' ')
        j--;
    i64 first;
    i64 pid = parse_int_back(buf, i, j, &first);
    if (first > j || pid < 0 || buf[first - 1] != '-')
        return -1;
    i64 cs = i;
    while (cs < first - 1 && buf[cs] == ' ')
        cs++;
    o[COMM_START] = cs;
    o[COMM_END] = first - 1;
    o[PID] = pid;
    o[TGID] = -1;
    o[CPU] = -1;
    o[TS] = ts;
    o[COUNTER_CLOCK] = 0;
    o[IRQ_START] = -1;
    o[IRQ_END] = -1;
    return parse_event(buf, w + 1, e, o);
}

/* perf script of a per-thread record (no sample cpu, e.g. `perf record -- CMD`):
 * "<comm> <tid> <ts>: <event>: payload", tid also "pid/tid": kind or -1. The timestamp is
 * the first word ending in ':' that follows a pid word; the comm (spaces allowed) precedes. */
static int try_no_cpu(const u8 *buf, i64 s, i64 e, i64 *o)
{
    i64 i = s, ps = -1, pe = -1;
    while (i < e) {
        while (i < e && buf[i] == ' ')
            i++;
        i64 ws = i;
        while (i < e && buf[i] != ' ')
            i++;
        if (i - ws >= 2 && buf[i - 1] == ':' && ps > s && isdig(buf[ws])) {
            i64 ts;
            int counter;
            /* A "[" before it is a cpu column that failed to parse (a damaged ftrace
             * line): never read as this layout. */
            if (memchr(buf + s, '[', (size_t)(ws - s)) != NULL)
                return -1;
            if (!parse_ts(buf, ws, i - 1, &ts, &counter) || counter)
                return -1;
            i64 first, tgid = -1;
            i64 pid = parse_int_back(buf, ps, pe - 1, &first);
            if (pid < 0)
                return -1;
            if (first > ps && buf[first - 1] == '/') {
                tgid = parse_int_back(buf, ps, first - 2, &first);
                if (tgid < 0)
                    return -1;
            }
            if (first != ps)
                return -1;
            i64 ce = ps;
            while (ce > s && buf[ce - 1] == ' ')
                ce--;
            o[COMM_START] = s;
            o[COMM_END] = ce;
            o[PID] = pid;
            o[TGID] = tgid;
            o[CPU] = -1;
            o[IRQ_START] = -1;
            o[IRQ_END] = -1;
            o[TS] = ts;
            o[COUNTER_CLOCK] = 0;
            /* Without an event name this weak layout did not match: the reason stays. */
            i64 reason = o[REASON];
            int kind = parse_event(buf, i, e, o);
            if (kind == UNPARSED)
                o[REASON] = reason;
            return kind == UNPARSED ? -1 : kind;
        }
        ps = ws;
        pe = i;
    }
    return -1;
}

/* trace-cmd report -l: "<comm>-<pid> <cpu><flags> <ts>: <event>: payload" (the cpu
 * digits run into the 4-5 latency flags, which never start with a digit): kind or -1. */
static int try_latency(const u8 *buf, i64 s, i64 e, i64 *o)
{
    i64 i = s, ps = -1, pe = -1;
    while (i < e) {
        while (i < e && buf[i] == ' ')
            i++;
        i64 ws = i;
        while (i < e && buf[i] != ' ')
            i++;
        if (i - ws >= 2 && buf[i - 1] == ':' && ps > s && isdig(buf[ws])) {
            i64 ts;
            int counter;
            if (!parse_ts(buf, ws, i - 1, &ts, &counter))
                return -1;
            i64 f = ps;
            u64 cpu = 0;
            while (f < pe && isdig(buf[f])) {
                cpu = cpu * 10 + (u64)(buf[f] - '0');
                f++;
            }
            if (f == ps || f - ps > 6 || !(4 <= pe - f && pe - f <= 5))
                return -1;
            i64 j = ps - 1;
            while (j > s && buf[j] == ' ')
                j--;
            i64 first;
            i64 pid = parse_int_back(buf, s, j, &first);
            if (first > j || pid < 0 || first - 1 < s || buf[first - 1] != '-')
                return -1;
            o[COMM_START] = s;
            o[COMM_END] = first - 1;
            o[PID] = pid;
            o[TGID] = -1;
            o[CPU] = (i64)cpu;
            o[IRQ_START] = f;
            o[IRQ_END] = pe;
            o[TS] = ts;
            o[COUNTER_CLOCK] = counter;
            return parse_event(buf, i, e, o);
        }
        ps = ws;
        pe = i;
    }
    return -1;
}

/* Index of the ':' ending a trace-cmd "NAME: " line prefix at s, or -1: one word ending in
 * ':' then a space, not starting with a digit (a mail line's "secs.frac:"). */
static i64 instance_colon(const u8 *buf, i64 s, i64 e)
{
    if (isdig(buf[s]))
        return -1;
    i64 i = s;
    while (i < e && buf[i] != ' ')
        i++;
    if (i - s < 2 || i == e || buf[i - 1] != ':')
        return -1;
    return i - 1;
}

/* "CPU:N [LOST M EVENTS]" / "CPU:N [LOST EVENTS]" (the kernel) and "CPU:N [M EVENTS
 * DROPPED]" / "CPU:N [EVENTS DROPPED]" (trace-cmd report); the count is -1 when not given. */
static int lost_marker(const u8 *buf, i64 s, i64 e, i64 *o)
{
    i64 i = s + 4;
    u64 cpu = 0;
    while (i < e && isdig(buf[i])) {
        cpu = cpu * 10 + (u64)(buf[i] - '0');
        i++;
    }
    if (i == s + 4 || i + 7 > e || buf[i] != ' ' || buf[i + 1] != '[')
        return 0;
    i += 2;
    int lost = buf[i] == 'L' && buf[i + 1] == 'O' && buf[i + 2] == 'S' && buf[i + 3] == 'T';
    if (lost)
        i += 5; /* "LOST " */
    i64 count = -1;
    if (i < e && isdig(buf[i])) {
        u64 c = 0;
        while (i < e && isdig(buf[i])) {
            c = c * 10 + (u64)(buf[i] - '0');
            i++;
        }
        count = (i64)c;
        if (!lost)
            i++;
    }
    if (!lost && !(starts_with(buf, i, e, "EVENTS DROPPED]", 15) && i + 15 == e))
        return 0;
    o[CPU] = (i64)cpu;
    o[TS] = count;
    return 1;
}

/* trace-cmd report preamble lines ("version = 6", "cpus=2", "CPU 1 is empty"). */
static int preamble(const u8 *buf, i64 s, i64 e)
{
    if (starts_with(buf, s, e, "version = ", 10) || starts_with(buf, s, e, "cpus=", 5))
        return 1;
    if (!starts_with(buf, s, e, "CPU", 3))
        return 0;
    i64 i = s + 3;
    while (i < e && (buf[i] == ' ' || isdig(buf[i])))
        i++;
    return starts_with(buf, i, e, "is empty", 8);
}

/* Kind of the line buf[s:e] (blank and quoting already removed); fills o. */
static int classify(const u8 *buf, i64 s, i64 e, i64 *o)
{
    u8 c = buf[s];
    if (c == '#')
        return HEADER;
    if (c == '=' && s + 1 < e && buf[s + 1] == '>') /* " => func" stack frame */
        return STACK;
    if (c == '<' && starts_with(buf, s, e, "<stack trace>", 13))
        return STACK;
    if (c == 'C' && starts_with(buf, s, e, "CPU:", 4) && lost_marker(buf, s, e, o))
        return LOST;
    if (preamble(buf, s, e))
        return HEADER;
    int res = -1;
    o[REASON] = R_LAYOUT;
    i64 b = s;
    while (res < 0) {
        const u8 *open = memchr(buf + b, '[', (size_t)(e - b));
        if (open == NULL)
            break;
        b = open - buf;
        res = try_bracket(buf, s, e, b, o);
        b++;
    }
    if (res < 0)
        res = try_latency(buf, s, e, o);
    if (res < 0 && isdig(c))
        res = try_ts_first(buf, s, e, o);
    if (res < 0)
        res = try_no_cpu(buf, s, e, o);
    return res < 0 ? UNPARSED : res;
}

/* One line: trims, classifies, splits off a trace-cmd buffer name; kind of line k. */
static int scan_line(const u8 *buf, i64 s, i64 e, i64 *out, const u8 *kind, i64 k, i64 *end)
{
    i64 *o = out + k * SCAN_COLUMNS;
    while (s < e && (buf[s] == ' ' || buf[s] == '\t'))
        s++;
    while (s < e && buf[s] == '>') { /* "> " mail quoting, any depth */
        s++;
        while (s < e && (buf[s] == ' ' || buf[s] == '\t'))
            s++;
    }
    while (e > s && (buf[e - 1] == ' ' || buf[e - 1] == '\t'))
        e--;
    if (s == e)
        return BLANK;
    o[INSTANCE_END] = 0;
    int res = classify(buf, s, e, o);
    if (res == EVENT) {
        /* A trace-cmd buffer name read as the start of comm ("NAME:   dd-1 [001] ..."): split
         * off when what follows "NAME: " is trace-cmd's whole comm column, 16 characters (8
         * with -l, whose flags follow the cpu digits). A kernel comm (15 characters at most,
         * in its own 16-wide column) holding ": " is never split. */
        i64 colon = instance_colon(buf, s, o[COMM_END]);
        int lat = o[IRQ_START] > 0 && isdig(buf[o[IRQ_START] - 1]);
        if (colon > 0 && o[COMM_END] - colon - 2 != (lat ? 8 : 16))
            colon = -1;
        if (colon > 0) {
            o[INSTANCE_END] = colon;
            i64 c = colon + 1;
            while (buf[c] == ' ')
                c++;
            o[COMM_START] = c;
        } else if (k > 0 && kind[k - 1] == LOST) {
            /* trace-cmd prints a drop marker and the next event as one prefixed record. */
            o[INSTANCE_END] = out[(k - 1) * SCAN_COLUMNS + INSTANCE_END];
        }
    } else if (res == UNPARSED) {
        /* A prefixed line no layout reads whole (a drop marker): try without the name. */
        i64 colon = instance_colon(buf, s, e);
        i64 reason = o[REASON];
        if (colon > 0) {
            i64 c = colon + 1;
            while (c < e && buf[c] == ' ')
                c++;
            res = c < e ? classify(buf, c, e, o) : UNPARSED;
        }
        if (res == UNPARSED)
            o[REASON] = reason;
        else
            o[INSTANCE_END] = colon;
    }
    if (res == EVENT)
        *end = e;
    return res;
}

/* Start of the trace-cmd buffer name ending at colon: the word before it, which may be on
 * the line before (a drop marker's, docs/trace-formats.md "Other producers"). */
static inline i64 name_start(const u8 *buf, i64 colon)
{
    i64 s = colon;
    while (s > 0 && buf[s - 1] > ' ' && buf[s - 1] != '>')
        s--;
    return s;
}

/* Lines in buf (a last line without "\n" counts) and whether every byte is ASCII, in one
 * pass 16 bytes at a time where SSE2 is (every x86-64): memchr per line costs a call per
 * line, and compilers do not vectorize the byte loop's 64-bit count well. */
static i64 text_shape(const u8 *buf, i64 size, int *ascii)
{
    i64 n = 0, i = 0;
    u8 high = 0;
#ifdef __SSE2__
    const __m128i newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    __m128i any = zero;
    while (size - i >= 16) {
        /* Per-byte counts (0 - (-1) per match) for at most 255 vectors, then summed. */
        __m128i counts = zero;
        i64 stop = i + 16 * 255 < size - 15 ? i + 16 * 255 : size - 15;
        for (; i < stop; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(buf + i));
            counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(v, newline));
            any = _mm_or_si128(any, v);
        }
        __m128i sums = _mm_sad_epu8(counts, zero);
        n += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
    high = _mm_movemask_epi8(any) ? 0x80 : 0;
#endif
    for (; i < size; i++) {
        n += buf[i] == '\n';
        high |= buf[i];
    }
    *ascii = high < 0x80;
    return n + (size > 0 && buf[size - 1] != '\n');
}

/* Line k's span: start s, end excluding "\n" and a "\r" before it; returns the next start. */
static i64 next_line(const u8 *buf, i64 size, i64 s, i64 *end)
{
    const u8 *nl = memchr(buf + s, '\n', (size_t)(size - s));
    i64 i = nl ? nl - buf : size;
    *end = (i > s && buf[i - 1] == '\r') ? i - 1 : i;
    return i + 1;
}

/* ------------------------------------------------------------------------------------ */
/* Payload tokens                                                                        */

typedef struct {
    i64 *ks, *ke, *vs, *ve, *ival;
    u64 *kh;
    u8 *iok;
} Tokens;

/* Decimal (optionally negative) or 0x-hex integer filling buf[s:e]; 1 if it is one. */
static int parse_int(const u8 *buf, i64 s, i64 e, i64 *value)
{
    int neg = 0;
    u64 v = 0;
    *value = 0;
    if (s < e && buf[s] == '-') {
        neg = 1;
        s++;
    }
    if (s >= e)
        return 0;
    if (e - s > 2 && buf[s] == '0' && (buf[s + 1] == 'x' || buf[s + 1] == 'X')) {
        if (e - s - 2 > 15)
            return 0;
        for (i64 i = s + 2; i < e; i++) {
            u8 c = buf[i];
            u64 d;
            if (isdig(c))
                d = c - '0';
            else if (c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return 0;
            v = v * 16 + d;
        }
    } else {
        if (e - s > 18)
            return 0;
        for (i64 i = s; i < e; i++) {
            if (!isdig(buf[i]))
                return 0;
            v = v * 10 + (u64)(buf[i] - '0');
        }
    }
    *value = neg ? -(i64)v : (i64)v;
    return 1;
}

static inline void put_token(Tokens *T, i64 t, i64 ks, i64 ke, u64 kh, i64 vs, i64 ve, i64 ival,
                             int iok)
{
    T->ks[t] = ks;
    T->ke[t] = ke;
    T->kh[t] = kh;
    T->vs[t] = vs;
    T->ve[t] = ve;
    T->ival[t] = ival;
    T->iok[t] = (u8)iok;
}

/* Tokens of the payload buf[i:e] stored from index t; returns the index after the last,
 * and in *sig the hash of the line's key sequence. A line of b bytes gives at most
 * (b + 1) / 2 tokens. */
static i64 tokenize_line(const u8 *buf, i64 i, i64 e, int shrink, Tokens *T, i64 t, u64 *sig)
{
    u64 h = FNV_OFFSET;
    i64 word = 0, ps = -1, pe = -1;
    int raw_shrink = 0;
    for (;;) {
        while (i < e && buf[i] == ' ')
            i++;
        if (i >= e)
            break;
        i64 ws = i, eq = -1;
        u64 hk = FNV_OFFSET, v = 0;
        int digits = 1;
        while (i < e) {
            u8 c = buf[i];
            if (c == ' ')
                break;
            if (c == '=') { /* the key (hashed as it is read) ends at the first "=" */
                eq = i;
                i++;
                if (i < e && buf[i] == '(') { /* "=(" value runs to ")" */
                    while (i < e && buf[i] != ')')
                        i++;
                    if (i < e)
                        i++;
                    digits = 0;
                    break;
                }
                /* The value, read as a decimal on the way (else parse_int below). */
                while (i < e && buf[i] != ' ') {
                    if (!isdig(buf[i]))
                        digits = 0;
                    v = v * 10 + (u64)(buf[i] - '0');
                    i++;
                }
                break;
            }
            hk = (hk ^ c) * FNV_PRIME;
            i++;
        }
        i64 we = i;
        word++;
        /* `trace-cmd report -R` prints "shr=%p shrink=%p ..." where the text has the %pS
         * symbol and %p pointer: its line is key=value throughout. */
        if (word == 1 && eq == ws + 3 && memcmp(buf + ws, "shr", 3) == 0)
            raw_shrink = 1;
        if (shrink && word <= 2 && !raw_shrink) {
            i64 ve = (word == 2 && buf[we - 1] == ':') ? we - 1 : we;
            put_token(T, t, -1 - word, -1 - word, (u64)word, ws, ve, 0, 0);
            h = (h ^ (u64)word) * FNV_PRIME;
            t++;
            continue;
        }
        if (eq > ws) {
            if (ps >= 0) { /* the pending words are a phrase without a value */
                u64 kp = fnv1a(buf, ps, pe);
                put_token(T, t++, ps, pe, kp, -1, -1, 0, 0);
                h = (h ^ kp) * FNV_PRIME;
                ps = -1;
            }
            i64 vend = buf[we - 1] == ',' ? we - 1 : we;
            i64 n = vend - eq - 1, value;
            int ok;
            if (digits && 0 < n && n <= 18 && vend == we) {
                value = (i64)v;
                ok = 1;
            } else {
                ok = parse_int(buf, eq + 1, vend, &value);
            }
            put_token(T, t++, ws, eq, hk, eq + 1, vend, value, ok);
            h = (h ^ hk) * FNV_PRIME;
            continue;
        }
        i64 value;
        int ok = parse_int(buf, ws, we, &value);
        int gfp = ps >= 0 && pe - ps == 9 && memcmp(buf + ps, "gfp_flags", 9) == 0;
        if (ps >= 0 && (ok || gfp)) {
            u64 kp = fnv1a(buf, ps, pe);
            put_token(T, t++, ps, pe, kp, ws, we, value, ok);
            h = (h ^ kp) * FNV_PRIME;
            ps = -1;
        } else if (ps >= 0) {
            pe = we;
        } else {
            ps = ws;
            pe = we;
        }
    }
    if (ps >= 0) {
        u64 kp = fnv1a(buf, ps, pe);
        put_token(T, t++, ps, pe, kp, -1, -1, 0, 0);
        h = (h ^ kp) * FNV_PRIME;
    }
    *sig = h;
    return t;
}

/* ------------------------------------------------------------------------------------ */
/* Arrow string views                                                                    */

/* The Arrow string_view of buf[s:e] as view g (16 bytes, zeroed): (length, 12 inline
 * bytes) for a short string, else (length, 4-byte prefix, buffer 0, offset p into data),
 * its bytes copied to data[p:]. An empty or reversed span stays an empty string. Returns
 * the next free p. */
static inline i64 put_view(const u8 *buf, i64 s, i64 e, u8 *views, i64 g, u8 *data, i64 p)
{
    i64 size = e - s;
    if (size <= 0)
        return p;
    u8 *v = views + 16 * g;
    u32 length = (u32)size;
    memcpy(v, &length, 4);
    if (size <= VIEW_INLINE) {
        memcpy(v + 4, buf + s, (size_t)size);
        return p;
    }
    u32 zero = 0, offset = (u32)p;
    memcpy(v + 4, buf + s, 4);
    memcpy(v + 8, &zero, 4);
    memcpy(v + 12, &offset, 4);
    memcpy(data + p, buf + s, (size_t)size);
    return p + size;
}

/* ------------------------------------------------------------------------------------ */
/* Python glue                                                                           */

/* A new bytearray of n bytes (zeroed if asked); *ptr its storage. */
static PyObject *new_bytes(i64 n, int zero, void **ptr)
{
    PyObject *b = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (b == NULL)
        return NULL;
    *ptr = PyByteArray_AS_STRING(b);
    if (zero && n > 0)
        memset(*ptr, 0, (size_t)n);
    return b;
}

/* A contiguous buffer argument of n items of `item` bytes (n < 0: any multiple). */
static int get_array(PyObject *obj, Py_buffer *view, i64 item, i64 n, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % item != 0 || (n >= 0 && view->len != n * item)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %lld items of %lld bytes", name,
                     view->len, (long long)n, (long long)item);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void release(Py_buffer *views, int n)
{
    for (int i = 0; i < n; i++)
        if (views[i].obj != NULL)
            PyBuffer_Release(&views[i]);
}

/* The arguments (buf, starts, ends, flags) of a function over n byte spans of buf: int64
 * starts and ends, one byte of flags per span. */
static int get_spans(PyObject *args, const char *name, Py_buffer v[4], i64 *n)
{
    PyObject *a[4];
    if (!PyArg_UnpackTuple(args, name, 4, 4, &a[0], &a[1], &a[2], &a[3]))
        return -1;
    if (get_array(a[0], &v[0], 1, -1, "buf") < 0 || get_array(a[1], &v[1], 8, -1, "starts") < 0) {
        release(v, 4);
        return -1;
    }
    *n = v[1].len / 8;
    if (get_array(a[2], &v[2], 8, *n, "ends") < 0 || get_array(a[3], &v[3], 1, *n, "flags") < 0) {
        release(v, 4);
        return -1;
    }
    return 0;
}

static PyObject *py_text_shape(PyObject *self, PyObject *arg)
{
    Py_buffer b;
    if (get_array(arg, &b, 1, -1, "buf") < 0)
        return NULL;
    i64 n;
    int ascii;
    Py_BEGIN_ALLOW_THREADS n = text_shape(b.buf, b.len, &ascii);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    return Py_BuildValue("(LO)", (long long)n, ascii ? Py_True : Py_False);
}

static PyObject *py_lines(PyObject *self, PyObject *arg)
{
    Py_buffer b;
    if (get_array(arg, &b, 1, -1, "buf") < 0)
        return NULL;
    const u8 *buf = b.buf;
    int ascii;
    i64 size = b.len, n = text_shape(buf, size, &ascii);
    i64 *starts = NULL, *ends = NULL;
    PyObject *s = new_bytes(8 * n, 0, (void **)&starts);
    PyObject *e = new_bytes(8 * n, 0, (void **)&ends);
    if (s == NULL || e == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        PyBuffer_Release(&b);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS i64 at = 0;
    for (i64 k = 0; k < n; k++) {
        starts[k] = at;
        at = next_line(buf, size, at, &ends[k]);
    }
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    return Py_BuildValue("(NN)", s, e);
}

static PyObject *py_scan(PyObject *self, PyObject *args)
{
    PyObject *data;
    long long lines = -1;
    if (!PyArg_ParseTuple(args, "O|L:scan", &data, &lines))
        return NULL;
    Py_buffer b;
    if (get_array(data, &b, 1, -1, "buf") < 0)
        return NULL;
    const u8 *buf = b.buf;
    int ascii;
    i64 size = b.len, n = lines >= 0 ? lines : text_shape(buf, size, &ascii);
    i64 *starts = NULL, *ends = NULL, *out = NULL;
    u8 *kind = NULL;
    PyObject *s = new_bytes(8 * n, 0, (void **)&starts);
    PyObject *e = new_bytes(8 * n, 0, (void **)&ends);
    PyObject *k = new_bytes(n, 0, (void **)&kind);
    PyObject *o = new_bytes(8 * n * SCAN_COLUMNS, 0, (void **)&out);
    if (s == NULL || e == NULL || k == NULL || o == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        Py_XDECREF(k);
        Py_XDECREF(o);
        PyBuffer_Release(&b);
        return NULL;
    }
    i64 at = 0, j = 0;
    Py_BEGIN_ALLOW_THREADS for (; j < n && at < size; j++)
    {
        starts[j] = at;
        at = next_line(buf, size, at, &ends[j]);
        kind[j] = (u8)scan_line(buf, starts[j], ends[j], out, kind, j, &ends[j]);
    }
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    if (j != n || at < size) {
        PyErr_Format(PyExc_ValueError, "scan: the text has not %lld lines", (long long)n);
        Py_DECREF(s);
        Py_DECREF(e);
        Py_DECREF(k);
        Py_DECREF(o);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", s, e, k, o);
}

static int compare_u64(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return (x > y) - (x < y);
}

static PyObject *py_group_hashes(PyObject *self, PyObject *arg)
{
    Py_buffer b;
    if (get_array(arg, &b, 8, -1, "hashes") < 0)
        return NULL;
    const u64 *hashes = b.buf;
    i64 n = b.len / 8;
    i64 *ids;
    PyObject *ids_obj = new_bytes(8 * n, 0, (void **)&ids);
    i64 cap = 64, m = 0; /* cap: a power of two, kept over twice the distinct values */
    i64 *table = malloc(sizeof(i64) * cap);
    u64 *values = malloc(sizeof(u64) * cap);
    i64 *firsts = malloc(sizeof(i64) * cap);
    if (ids_obj == NULL || table == NULL || values == NULL || firsts == NULL)
        goto fail;
    for (i64 i = 0; i < cap; i++)
        table[i] = -1;
    /* ids holds the distinct index in first-seen order, then its rank. */
    for (i64 k = 0; k < n; k++) {
        u64 h = hashes[k];
        i64 slot = (i64)(h & (u64)(cap - 1));
        while (table[slot] >= 0 && values[table[slot]] != h)
            slot = (slot + 1) & (cap - 1);
        if (table[slot] >= 0) {
            ids[k] = table[slot];
            continue;
        }
        table[slot] = m;
        values[m] = h;
        firsts[m] = k;
        ids[k] = m++;
        if (2 * m > cap) {
            cap *= 2;
            u64 *v2 = realloc(values, sizeof(u64) * cap);
            if (v2 == NULL)
                goto fail;
            values = v2;
            i64 *f2 = realloc(firsts, sizeof(i64) * cap);
            if (f2 == NULL)
                goto fail;
            firsts = f2;
            free(table);
            if ((table = malloc(sizeof(i64) * cap)) == NULL)
                goto fail;
            for (i64 i = 0; i < cap; i++)
                table[i] = -1;
            for (i64 d = 0; d < m; d++) {
                i64 s2 = (i64)(values[d] & (u64)(cap - 1));
                while (table[s2] >= 0)
                    s2 = (s2 + 1) & (cap - 1);
                table[s2] = d;
            }
        }
    }
    /* Rank the distinct values (a block's event names: few, but text can hold many). */
    i64 *order = malloc(sizeof(i64) * (m + 1)), *rank = malloc(sizeof(i64) * (m + 1));
    u64 *pairs = malloc(2 * sizeof(u64) * (m + 1));
    if (order == NULL || rank == NULL || pairs == NULL) {
        free(order);
        free(rank);
        free(pairs);
        goto fail;
    }
    for (i64 i = 0; i < m; i++) {
        pairs[2 * i] = values[i];
        pairs[2 * i + 1] = (u64)i;
    }
    qsort(pairs, (size_t)m, 2 * sizeof(u64), compare_u64);
    for (i64 i = 0; i < m; i++)
        order[i] = (i64)pairs[2 * i + 1];
    free(pairs);
    for (i64 i = 0; i < m; i++)
        rank[order[i]] = i;
    for (i64 k = 0; k < n; k++)
        ids[k] = rank[ids[k]];
    i64 *first;
    PyObject *first_obj = new_bytes(8 * m, 0, (void **)&first);
    if (first_obj != NULL)
        for (i64 i = 0; i < m; i++)
            first[i] = firsts[order[i]];
    free(order);
    free(rank);
    free(table);
    free(values);
    free(firsts);
    PyBuffer_Release(&b);
    if (first_obj == NULL) {
        Py_DECREF(ids_obj);
        return NULL;
    }
    return Py_BuildValue("(NN)", first_obj, ids_obj);
fail:
    free(table);
    free(values);
    free(firsts);
    Py_XDECREF(ids_obj);
    PyBuffer_Release(&b);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
}

/* tokenize(buf, pstart, pend, mode) → (first, count, sig, ks, ke, kh, vs, ve, ival, iok):
 * per line its first token and token count and key-sequence hash, per token its key span
 * and hash, value span (-1, -1 for a phrase without value), integer value and whether
 * the value is an integer. mode[k] = 1: line k is shrink_slab free text. */
static PyObject *py_tokenize(PyObject *self, PyObject *args)
{
    Py_buffer v[4] = {{0}};
    i64 n;
    if (get_spans(args, "tokenize", v, &n) < 0)
        return NULL;
    const u8 *buf = v[0].buf, *mode = v[3].buf;
    const i64 *pstart = v[1].buf, *pend = v[2].buf;
    i64 bound = 0;
    for (i64 k = 0; k < n; k++)
        bound += pend[k] > pstart[k] ? (pend[k] - pstart[k] + 1) / 2 : 0;
    PyObject *r[10] = {NULL};
    void *p[10];
    const i64 sizes[10] = {8 * n, 8 * n, 8 * n, 8 * bound, 8 * bound,
                           8 * bound, 8 * bound, 8 * bound, 8 * bound, bound};
    for (int i = 0; i < 10; i++)
        if ((r[i] = new_bytes(sizes[i], 0, &p[i])) == NULL)
            goto fail;
    i64 *first = p[0], *count = p[1];
    u64 *sig = p[2];
    Tokens T = {p[3], p[4], p[6], p[7], p[8], p[5], p[9]};
    i64 t = 0;
    Py_BEGIN_ALLOW_THREADS for (i64 k = 0; k < n; k++)
    {
        first[k] = t;
        t = tokenize_line(buf, pstart[k], pend[k], mode[k] == 1, &T, t, &sig[k]);
        count[k] = t - first[k];
    }
    Py_END_ALLOW_THREADS release(v, 4);
    for (int i = 3; i < 10; i++)
        if (PyByteArray_Resize(r[i], (Py_ssize_t)(t * (i == 9 ? 1 : 8))) < 0)
            goto fail;
    return Py_BuildValue("(NNNNNNNNNN)", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                         r[9]);
fail:
    release(v, 4);
    for (int i = 0; i < 10; i++)
        Py_XDECREF(r[i]);
    return NULL;
}

/* string_views(buf, s, e, valid) → (views, data): Arrow string_view buffers of the spans
 * buf[s[i]:e[i]], empty where not valid. */
static PyObject *py_string_views(PyObject *self, PyObject *args)
{
    Py_buffer v[4] = {{0}};
    i64 n;
    if (get_spans(args, "string_views", v, &n) < 0)
        return NULL;
    const u8 *buf = v[0].buf, *valid = v[3].buf;
    const i64 *s = v[1].buf, *e = v[2].buf;
    i64 total = 0;
    for (i64 i = 0; i < n; i++)
        if (valid[i] && e[i] - s[i] > VIEW_INLINE)
            total += e[i] - s[i];
    u8 *views, *data;
    PyObject *vo = new_bytes(16 * n, 1, (void **)&views);
    PyObject *dobj = new_bytes(total, 0, (void **)&data);
    if (vo == NULL || dobj == NULL) {
        Py_XDECREF(vo);
        Py_XDECREF(dobj);
        release(v, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS i64 at = 0;
    for (i64 i = 0; i < n; i++)
        if (valid[i])
            at = put_view(buf, s[i], e[i], views, i, data, at);
    Py_END_ALLOW_THREADS release(v, 4);
    return Py_BuildValue("(NN)", vo, dobj);
}

/* A growable array of 16-byte views (the pieces of one flags column). */
typedef struct {
    u8 *v;
    i64 n, cap;
} Pieces;

static int pieces_add(Pieces *P, const u8 *buf, i64 s, i64 e, u8 **data, i64 *p)
{
    if (P->n == P->cap) {
        i64 cap = P->cap ? 2 * P->cap : 1024;
        u8 *grown = realloc(P->v, (size_t)(16 * cap));
        if (grown == NULL)
            return -1;
        P->v = grown;
        P->cap = cap;
    }
    memset(P->v + 16 * P->n, 0, 16);
    *p = put_view(buf, s, e, P->v, P->n, *data, *p);
    P->n++;
    return 0;
}

/* emit's interface, declared once: its array arguments (name, bytes per item) and its
 * results (name, zero-filled or not), in order. The enums below and the module's
 * EMIT_ARGS / EMIT_RESULTS (the names, in this order, which columns.py passes and reads
 * by) are all made from these lists, so no side can reorder one alone. */
#define EMIT_ARGS(X)                                                                        \
    X(A_BUF, "buf", 1) X(A_OUT, "out", 8) X(A_ENDS, "ends", 8) X(A_ROWS, "rows", 8)         \
    X(A_IDS, "ids", 8) X(A_EV_START, "ev_start", 8) X(A_MODE, "mode", 1)                    \
    X(A_PLAN_HASH, "plan_hash", 8) X(A_PLAN_COL, "plan_col", 8) X(A_PLAN_OFF, "plan_off", 8) \
    X(A_COL_OFF, "col_off", 8) X(A_KINDS, "kinds", 1) X(A_SLOTS, "slots", 8)               \
    X(A_BASE_INT, "base_int", 8) X(A_BASE_STR, "base_str", 8)                              \
    X(A_BASE_FLAG, "base_flag", 8) X(A_FCOL_OFF, "fcol_off", 8)
/* Zero-filled (1): what the pass writes in part (validity bitmaps, counts, values of fields
 * a line lacks, string views, whose unused bytes must be 0); not (0): the common columns
 * every line writes, the string data (cut to its length after) and the pieces (made after). */
#define EMIT_RESULTS(X)                                                                     \
    X(O_LINE, "line", 0) X(O_PID, "pid", 0) X(O_TGID, "tgid", 0) X(O_CPU, "cpu", 0)         \
    X(O_TS, "ts", 0) X(O_COMM, "comm", 1) X(O_IRQ, "irq", 1) X(O_INST, "inst", 1)           \
    X(O_COMMON_VALID, "common_valid", 1) X(O_COMMON_PRESENT, "common_present", 1)           \
    X(O_VALS, "vals", 1) X(O_IVALID, "ivalid", 1) X(O_VIEWS, "views", 1)                    \
    X(O_SVALID, "svalid", 1) X(O_LOFF, "loff", 1) X(O_FVALID, "fvalid", 1)                  \
    X(O_PIECES, "pieces", 0) X(O_PIECE_OFF, "piece_off", 1) X(O_PRESENT, "present", 1)      \
    X(O_DATA, "data", 0) X(O_PLANNED, "planned", 1) X(O_BAD, "bad", 1)
#define ENUM_NAME(id, name, value) id,
#define NAME_OF(id, name, value) name,
#define VALUE_OF(id, name, value) value,
enum { EMIT_ARGS(ENUM_NAME) N_ARGS };
enum { EMIT_RESULTS(ENUM_NAME) N_OUT };
static const char *const emit_arg_names[N_ARGS] = {EMIT_ARGS(NAME_OF)};
static const i64 emit_arg_items[N_ARGS] = {EMIT_ARGS(VALUE_OF)};
static const char *const emit_result_names[N_OUT] = {EMIT_RESULTS(NAME_OF)};
static const int emit_result_zeroed[N_OUT] = {EMIT_RESULTS(VALUE_OF)};
#define N_COMMON_VALID 4 /* tgid, cpu, irq_flags, instance */

/* emit(buf, out, ends, rows, ids, ev_start, mode, plan_hash, plan_col, plan_off, col_off,
 *      kinds, slots, base_int, base_str, base_flag, fcol_off, line_base)
 *
 * One in-order pass over the event lines rows[k] (event ids[k], whose rows go to
 * positions ev_start[e]..ev_start[e+1] in input order) writing the common columns and,
 * for an event with a plan, the payload's fields, tokenized on the way (see columns.py
 * for the layouts). Event e's plan: key hashes plan_hash[plan_off[e]:plan_off[e+1]] (in
 * printed order) naming columns plan_col (empty: no plan); column c's kind and its slot
 * among its kind's columns: kinds/slots[col_off[e] + c]. Its integer column with slot s
 * is vals[base_int[e] + s * ne ...], its string column views[base_str[e] + s * ne ...],
 * its flags column offsets loff[base_flag[e] + s * (ne + 1) ...] into the pieces of
 * flags column fcol_off[e] + s. Validity bitmaps (LSB first) are indexed like their
 * column's values. A key outside the plan unplans the event (planned[e] = 0: the caller
 * builds it on the general path); bad[k]: an integer field's value is not an integer. */
static PyObject *py_emit(PyObject *self, PyObject *args)
{
    if (PyTuple_GET_SIZE(args) != N_ARGS + 1) {
        PyErr_SetString(PyExc_TypeError, "emit: wrong number of arguments");
        return NULL;
    }
    i64 line_base = PyLong_AsLongLong(PyTuple_GET_ITEM(args, N_ARGS));
    if (line_base == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer v[N_ARGS] = {{0}};
    PyObject *r[N_OUT] = {NULL};
    void *p[N_OUT];
    Pieces *pieces = NULL;
    u8 *seen = NULL;
    i64 *filled = NULL, n_flags = 0;
    for (int i = 0; i < N_ARGS; i++)
        if (get_array(PyTuple_GET_ITEM(args, i), &v[i], emit_arg_items[i], -1,
                      emit_arg_names[i]) < 0)
            goto fail;
    const u8 *buf = v[A_BUF].buf, *mode = v[A_MODE].buf;
    const int8_t *kinds = v[A_KINDS].buf;
    const i64 *out = v[A_OUT].buf, *ends = v[A_ENDS].buf, *rows = v[A_ROWS].buf;
    const i64 *ids = v[A_IDS].buf, *ev_start = v[A_EV_START].buf;
    const u64 *plan_hash = v[A_PLAN_HASH].buf;
    const i64 *plan_col = v[A_PLAN_COL].buf, *plan_off = v[A_PLAN_OFF].buf;
    const i64 *col_off = v[A_COL_OFF].buf, *slots = v[A_SLOTS].buf;
    const i64 *base_int = v[A_BASE_INT].buf, *base_str = v[A_BASE_STR].buf;
    const i64 *base_flag = v[A_BASE_FLAG].buf, *fcol_off = v[A_FCOL_OFF].buf;
    i64 n = v[A_ROWS].len / 8, n_ev = v[A_EV_START].len / 8 - 1;
    i64 n_lines = v[A_ENDS].len / 8;
    if (n_ev < 0 || v[A_IDS].len != 8 * n || v[A_MODE].len != n_ev || v[A_OUT].len != 8 * SCAN_COLUMNS * n_lines ||
        v[A_PLAN_OFF].len != 8 * (n_ev + 1) || v[A_COL_OFF].len != 8 * (n_ev + 1) ||
        v[A_BASE_INT].len != 8 * (n_ev + 1) || v[A_BASE_STR].len != 8 * (n_ev + 1) ||
        v[A_BASE_FLAG].len != 8 * (n_ev + 1) || v[A_FCOL_OFF].len != 8 * (n_ev + 1) ||
        ev_start[n_ev] != n || v[A_KINDS].len != col_off[n_ev] ||
        v[A_SLOTS].len != 8 * col_off[n_ev] || v[A_PLAN_COL].len != v[A_PLAN_HASH].len ||
        v[A_PLAN_HASH].len != 8 * plan_off[n_ev]) {
        PyErr_SetString(PyExc_ValueError, "emit: inconsistent array sizes");
        goto fail;
    }
    for (i64 k = 0; k < n; k++)
        if (rows[k] < 0 || rows[k] >= n_lines || ids[k] < 0 || ids[k] >= n_ev) {
            PyErr_SetString(PyExc_ValueError, "emit: row or event id out of range");
            goto fail;
        }
    n_flags = fcol_off[n_ev];
    i64 n_cols = col_off[n_ev];
    /* Every string is a piece of its line's comm, irq flags, instance or payload: a bound
     * on their bytes, and on the tokens of one payload. */
    i64 total = 0, widest = 0;
    for (i64 k = 0; k < n; k++) {
        const i64 *o = out + rows[k] * SCAN_COLUMNS;
        i64 payload = ends[rows[k]] - o[PAYLOAD_START];
        total += o[COMM_END] - o[COMM_START] > 0 ? o[COMM_END] - o[COMM_START] : 0;
        total += o[IRQ_END] - o[IRQ_START] > 0 ? o[IRQ_END] - o[IRQ_START] : 0;
        if (o[INSTANCE_END] > 0)
            total += o[INSTANCE_END] - name_start(buf, o[INSTANCE_END]);
        total += payload > 0 ? payload : 0;
        widest = payload > widest ? payload : widest;
    }
    /* Bytes of each result (the pieces are sized after the pass). */
    const i64 sizes[N_OUT] = {
        [O_LINE] = 8 * n, [O_PID] = 4 * n, [O_TGID] = 4 * n, [O_CPU] = 4 * n, [O_TS] = 8 * n,
        [O_COMM] = 16 * n, [O_IRQ] = 16 * n, [O_INST] = 16 * n,
        [O_COMMON_VALID] = N_COMMON_VALID * ((n + 7) / 8),
        [O_COMMON_PRESENT] = 8 * N_COMMON_VALID * n_ev,
        [O_VALS] = 8 * base_int[n_ev], [O_IVALID] = (base_int[n_ev] + 7) / 8,
        [O_VIEWS] = 16 * base_str[n_ev], [O_SVALID] = (base_str[n_ev] + 7) / 8,
        [O_LOFF] = 4 * base_flag[n_ev], [O_FVALID] = (base_flag[n_ev] + 7) / 8,
        [O_PIECES] = 0, [O_PIECE_OFF] = 8 * (n_flags + 1), [O_PRESENT] = 8 * n_cols,
        [O_DATA] = total, [O_PLANNED] = n_ev, [O_BAD] = n};
    for (int i = 0; i < N_OUT; i++)
        if (i != O_PIECES && (r[i] = new_bytes(sizes[i], emit_result_zeroed[i], &p[i])) == NULL)
            goto fail;
    i64 scratch = (widest + 1) / 2 + 1;
    Tokens T;
    void *tok = malloc((size_t)(scratch * (6 * 8 + 1)));
    pieces = calloc((size_t)(n_flags + 1), sizeof(Pieces));
    seen = malloc((size_t)(n_cols + 1));
    filled = calloc((size_t)(n_ev + 1), sizeof(i64));
    if (tok == NULL || pieces == NULL || seen == NULL || filled == NULL) {
        free(tok);
        PyErr_NoMemory();
        goto fail;
    }
    T.ks = tok;
    T.ke = T.ks + scratch;
    T.vs = T.ke + scratch;
    T.ve = T.vs + scratch;
    T.ival = T.ve + scratch;
    T.kh = (u64 *)(T.ival + scratch);
    T.iok = (u8 *)(T.kh + scratch);
    i64 *line = p[O_LINE], *ts = p[O_TS], *vals = p[O_VALS];
    int32_t *pid = p[O_PID], *tgid = p[O_TGID], *cpu = p[O_CPU], *loff = p[O_LOFF];
    u8 *comm = p[O_COMM], *irq = p[O_IRQ], *inst = p[O_INST], *views = p[O_VIEWS];
    u8 *cvalid = p[O_COMMON_VALID], *ivalid = p[O_IVALID], *svalid = p[O_SVALID];
    u8 *fvalid = p[O_FVALID], *data = p[O_DATA], *planned = p[O_PLANNED], *bad = p[O_BAD];
    i64 *cpresent = p[O_COMMON_PRESENT], *present = p[O_PRESENT];
    i64 cstride = (n + 7) / 8, at_data = 0;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS for (i64 e = 0; e < n_ev; e++) planned[e] = plan_off[e + 1] > plan_off[e];
    for (i64 k = 0; k < n && !nomem; k++) {
        i64 e = ids[k], row = rows[k], at = filled[e]++, g = ev_start[e] + at;
        const i64 *o = out + row * SCAN_COLUMNS;
        line[g] = line_base + row + 1;
        pid[g] = (int32_t)o[PID];
        tgid[g] = (int32_t)o[TGID];
        cpu[g] = (int32_t)o[CPU];
        ts[g] = o[TS];
        i64 *cp = cpresent + N_COMMON_VALID * e;
        if (o[TGID] >= 0) {
            set_bit(cvalid, g);
            cp[0]++;
        }
        if (o[CPU] >= 0) {
            set_bit(cvalid + cstride, g);
            cp[1]++;
        }
        at_data = put_view(buf, o[COMM_START], o[COMM_END], comm, g, data, at_data);
        if (o[IRQ_START] >= 0) {
            set_bit(cvalid + 2 * cstride, g);
            cp[2]++;
            at_data = put_view(buf, o[IRQ_START], o[IRQ_END], irq, g, data, at_data);
        }
        i64 colon = o[INSTANCE_END];
        if (colon > 0) {
            set_bit(cvalid + 3 * cstride, g);
            cp[3]++;
            at_data = put_view(buf, name_start(buf, colon), colon, inst, g, data, at_data);
        }
        if (!planned[e])
            continue;
        i64 ne = ev_start[e + 1] - ev_start[e], lo = plan_off[e], m = plan_off[e + 1] - lo;
        i64 c0 = col_off[e];
        memset(seen + c0, 0, (size_t)(col_off[e + 1] - c0));
        u64 sig;
        i64 count = tokenize_line(buf, o[PAYLOAD_START], ends[row], mode[e] == 1, &T, 0, &sig);
        i64 j = 0;
        for (i64 t = 0; t < count; t++) {
            /* Keys come in printed order: look just after the previous key's spelling. */
            i64 tries = 0;
            while (tries < m && plan_hash[lo + j] != T.kh[t]) {
                j = j + 1 < m ? j + 1 : 0;
                tries++;
            }
            if (tries == m) {
                planned[e] = 0;
                break;
            }
            i64 c = plan_col[lo + j], kind = kinds[c0 + c], slot = slots[c0 + c];
            if (kind == K_INT && !T.iok[t] && T.vs[t] >= 0)
                bad[k] = 1; /* a repeated key's value too */
            if (seen[c0 + c]) /* a repeated key: the first one wins, as in the general path */
                continue;
            seen[c0 + c] = 1;
            if (kind == K_INT) {
                i64 x = base_int[e] + slot * ne + at;
                vals[x] = T.ival[t];
                if (T.iok[t]) {
                    set_bit(ivalid, x);
                    present[c0 + c]++;
                }
            } else if (T.vs[t] >= 0 && kind == K_STR) {
                i64 x = base_str[e] + slot * ne + at;
                at_data = put_view(buf, T.vs[t], T.ve[t], views, x, data, at_data);
                set_bit(svalid, x);
                present[c0 + c]++;
            } else if (T.vs[t] >= 0) { /* flags: the value split at every '|' */
                i64 x = base_flag[e] + slot * (ne + 1) + at;
                Pieces *P = &pieces[fcol_off[e] + slot];
                i64 s = T.vs[t];
                for (i64 i = s; i <= T.ve[t] && !nomem; i++)
                    if (i == T.ve[t] || buf[i] == '|') {
                        nomem = pieces_add(P, buf, s, i, &data, &at_data) < 0;
                        s = i + 1;
                    }
                set_bit(fvalid, x);
                present[c0 + c]++;
            }
        }
        if (planned[e])
            for (i64 f = fcol_off[e]; f < fcol_off[e + 1]; f++)
                loff[base_flag[e] + (f - fcol_off[e]) * (ne + 1) + at + 1] = (int32_t)pieces[f].n;
    }
    free(tok);
    Py_END_ALLOW_THREADS if (nomem)
    {
        PyErr_NoMemory();
        goto fail;
    }
    /* The flags pieces, column after column, and where each column's start. */
    i64 n_pieces = 0, *piece_off = p[O_PIECE_OFF];
    for (i64 f = 0; f < n_flags; f++) {
        piece_off[f] = n_pieces;
        n_pieces += pieces[f].n;
    }
    piece_off[n_flags] = n_pieces;
    u8 *all;
    if ((r[O_PIECES] = new_bytes(16 * n_pieces, 0, (void **)&all)) == NULL)
        goto fail;
    for (i64 f = 0; f < n_flags; f++)
        if (pieces[f].n)
            memcpy(all + 16 * piece_off[f], pieces[f].v, (size_t)(16 * pieces[f].n));
    if (PyByteArray_Resize(r[O_DATA], (Py_ssize_t)at_data) < 0)
        goto fail;
    for (i64 f = 0; f < n_flags; f++)
        free(pieces[f].v);
    free(pieces);
    free(seen);
    free(filled);
    release(v, N_ARGS);
    PyObject *result = PyTuple_New(N_OUT);
    if (result == NULL) {
        for (int i = 0; i < N_OUT; i++)
            Py_XDECREF(r[i]);
        return NULL;
    }
    for (int i = 0; i < N_OUT; i++)
        PyTuple_SET_ITEM(result, i, r[i]);
    return result;
fail:
    if (pieces != NULL)
        for (i64 f = 0; f < n_flags; f++)
            free(pieces[f].v);
    free(pieces);
    free(seen);
    free(filled);
    release(v, N_ARGS);
    for (int i = 0; i < N_OUT; i++)
        Py_XDECREF(r[i]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"text_shape", py_text_shape, METH_O,
     "(lines, ascii): lines in buf (a last line without a newline counts), all bytes ASCII."},
    {"lines", py_lines, METH_O, "(starts, ends) of every line of buf (int64 bytearrays)."},
    {"scan", py_scan, METH_VARARGS,
     "scan(buf[, lines]) -> (starts, ends, kind, fields) of every line of buf; lines is\n"
     "text_shape's count when the caller has it."},
    {"group_hashes", py_group_hashes, METH_O,
     "(first, ids) of uint64 hashes: np.unique's return_index and return_inverse."},
    {"tokenize", py_tokenize, METH_VARARGS, "Payload tokens of lines (see the source)."},
    {"string_views", py_string_views, METH_VARARGS, "Arrow string_view buffers of byte spans."},
    {"emit", py_emit, METH_VARARGS, "Columns of a block's event lines (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_parse", "Compiled core of the ftrace text reader.", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* m.NAME = the tuple of ``names`` (0 or -1 with an exception set). */
static int add_names(PyObject *m, const char *name, const char *const *names, int n)
{
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL) {
            Py_DECREF(tuple);
            return -1;
        }
        PyTuple_SET_ITEM(tuple, i, s);
    }
    if (PyModule_AddObject(m, name, tuple) < 0) {
        Py_DECREF(tuple);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__parse(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"EVENT", EVENT},
        {"HEADER", HEADER},
        {"BLANK", BLANK},
        {"LOST", LOST},
        {"STACK", STACK},
        {"UNPARSED", UNPARSED},
        {"COMM_START", COMM_START},
        {"COMM_END", COMM_END},
        {"PID", PID},
        {"TGID", TGID},
        {"CPU", CPU},
        {"TS", TS},
        {"NAME_START", NAME_START},
        {"NAME_END", NAME_END},
        {"PAYLOAD_START", PAYLOAD_START},
        {"REASON", REASON},
        {"COUNTER_CLOCK", COUNTER_CLOCK},
        {"IRQ_START", IRQ_START},
        {"IRQ_END", IRQ_END},
        {"INSTANCE_END", INSTANCE_END},
        {"NAME_HASH", NAME_HASH},
        {"SCAN_COLUMNS", SCAN_COLUMNS},
        {"K_INT", K_INT},
        {"K_STR", K_STR},
        {"K_FLAGS", K_FLAGS},
        {"N_COMMON_VALID", N_COMMON_VALID},
    };
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    if (add_names(m, "EMIT_ARGS", emit_arg_names, N_ARGS) < 0 ||
        add_names(m, "EMIT_RESULTS", emit_result_names, N_OUT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
