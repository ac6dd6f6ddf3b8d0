/*
 * Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which Debian's libopenmpi-dev
 * does not ship although ompi/op/op.h includes it (osc/iwarpx needs op.h for ompi_op_reduce,
 * the general accumulate path). op.h only uses OMPI_INT_2_FINT, for user-defined Fortran ops
 * (never reached from RMA: MPI allows only predefined ops there). On this ABI a Fortran
 * INTEGER is a C int, checked below, so the conversion is a cast.
 */
#ifndef IWARPX_COMPAT_FINT_2_INT_H
#define IWARPX_COMPAT_FINT_2_INT_H

#include "ompi_config.h"

#if OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "osc/iwarpx's fint_2_int.h stand-in assumes sizeof(Fortran INTEGER) == sizeof(int)"
#endif

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))

#endif
