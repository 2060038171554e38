// Not API. The OpenBLAS C interface, seen from Swift only through
// Sources/ActionRuntime/BLAS.swift (the one file that calls cblas_sgemm).
#include <cblas.h>
#include <stddef.h>

// LAPACK's pivoted Cholesky factorisation, which OpenBLAS carries (Debian's libopenblas0 and
// Homebrew's openblas build LAPACK in; there is no lapacke.h): the Fortran interface, arguments
// by reference, column-major, with the hidden length of the character argument last.
void dpstrf_(const char *uplo, const int *n, double *a, const int *lda, int *piv, int *rank, const double *tol,
             double *work, int *info, size_t uplo_length);
