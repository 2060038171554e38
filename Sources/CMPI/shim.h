// Open MPI's handles are macros over its globals, which Swift cannot import: functions return them.
#include <mpi.h>

static inline MPI_Comm cmpi_world(void) { return MPI_COMM_WORLD; }
static inline MPI_Datatype cmpi_float(void) { return MPI_FLOAT; }
static inline MPI_Datatype cmpi_byte(void) { return MPI_BYTE; }
static inline MPI_Datatype cmpi_int(void) { return MPI_INT; }
static inline MPI_Errhandler cmpi_errors_return(void) { return MPI_ERRORS_RETURN; }
static inline int cmpi_success(void) { return MPI_SUCCESS; }
static inline int cmpi_thread_funneled(void) { return MPI_THREAD_FUNNELED; }
static inline int cmpi_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
