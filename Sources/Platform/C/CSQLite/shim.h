#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro, ((sqlite3_destructor_type)-1), which Swift cannot import.
   Passed as a destructor it tells SQLite to copy the bound bytes before the call returns. */
static inline sqlite3_destructor_type csqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/* sqlite3_db_config is variadic. This form sets one on/off option (SQLITE_DBCONFIG_DEFENSIVE,
   SQLITE_DBCONFIG_TRUSTED_SCHEMA, ...) and stores the option's resulting state in *state. */
static inline int csqlite_db_config_flag(sqlite3 *db, int op, int enable, int *state) {
    return sqlite3_db_config(db, op, enable, state);
}

#endif
