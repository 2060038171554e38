// Not API. The OpenBLAS C interface, seen from Swift only through
// Sources/ActionRuntime/BLAS.swift (the one file that calls cblas_sgemm).
#include <cblas.h>
