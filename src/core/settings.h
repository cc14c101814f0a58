/* The library's SPARSERING_* environment settings that force a choice (tests and measurements set
 * them for a while, so they are read at every call: a getenv costs about 0.1 us). */
#ifndef SR_SETTINGS_H
#define SR_SETTINGS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The integer value of setting `name`, or `unset` when it is absent or empty. */
int sr_setting(const char *name, int unset);

#ifdef __cplusplus
}
#endif

#endif
