# IwarpxPackage
# -------------
# What `cmake --install` puts besides the provider and the components (which install
# themselves into IWARPX_FI_PROVIDER_DIR / IWARPX_OMPI_COMPONENT_DIR, cmake/IwarpxInstallDirs):
#   include/rdma/fi_ext_iwarpx.h, <libdir>/pkgconfig/iwarpx.pc, share/man/man7/fi_iwarpx.7.gz
# and the CPack DEB configuration: `cpack -G DEB` (or scripts/make_deb.sh) in the build dir
# makes iwarpx_<version>_amd64.deb with prefix /usr, i.e. the files where Debian's libfabric
# and Open MPI load them, and Depends computed by dpkg-shlibdeps.
include_guard(GLOBAL)

install(FILES ${PROJECT_SOURCE_DIR}/include/rdma/fi_ext_iwarpx.h
        DESTINATION ${IWARPX_INSTALL_INCLUDEDIR}/rdma)

# fi_iwarpx(7), written in roff (docs/man), gzipped as Debian installs man pages.
find_program(IWARPX_GZIP gzip REQUIRED)
set(_iwx_man_src ${PROJECT_SOURCE_DIR}/docs/man/fi_iwarpx.7)
set(_iwx_man_gz ${CMAKE_BINARY_DIR}/man/fi_iwarpx.7.gz)
add_custom_command(OUTPUT ${_iwx_man_gz}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND ${IWARPX_GZIP} -9nc ${_iwx_man_src} > ${_iwx_man_gz}
  DEPENDS ${_iwx_man_src} VERBATIM)
add_custom_target(iwarpx_man ALL DEPENDS ${_iwx_man_gz})
install(FILES ${_iwx_man_gz} DESTINATION ${IWARPX_INSTALL_MAN7DIR})

# iwarpx.pc, written at install time for the prefix installed to.
set(_iwx_mcadir "")
if(IWARPX_BUILD_MCA)
  set(_iwx_mcadir "${IWARPX_OMPI_COMPONENT_DIR}")
endif()
install(CODE "
  set(IWX_PC_TEMPLATE \"${PROJECT_SOURCE_DIR}/cmake/iwarpx.pc.in\")
  set(IWX_PC_STAGING \"${CMAKE_BINARY_DIR}/pc-staging\")
  set(IWX_PC_VERSION \"${PROJECT_VERSION}\")
  set(IWX_PC_LIBDIR \"${IWARPX_INSTALL_LIBDIR}\")
  set(IWX_PC_INCLUDEDIR \"${IWARPX_INSTALL_INCLUDEDIR}\")
  set(IWX_PC_PROVIDERDIR \"${IWARPX_FI_PROVIDER_DIR}\")
  set(IWX_PC_MCADIR \"${_iwx_mcadir}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/IwarpxInstallPc.cmake)

# The .deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME iwarpx)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "iwarpx")
# The Maintainer field. The default's domain is reserved (RFC 2606), so it reaches nobody and
# says so; whoever publishes a .deb sets the real contact: -DIWARPX_PACKAGE_MAINTAINER=...
# (lintian rejects the former "@localhost" address as bogus-mail-host).
set(IWARPX_PACKAGE_MAINTAINER "iwarpx maintainers <iwarpx-maintainers@example.org>"
    CACHE STRING "Maintainer field of the .deb: 'Name <address>'")
if(NOT IWARPX_PACKAGE_MAINTAINER MATCHES "^[^<>@]+ <[^<>@ ]+@[^<>@ ]+\\.[^<>@ ]+>$"
   OR IWARPX_PACKAGE_MAINTAINER MATCHES "@localhost")
  message(FATAL_ERROR "IWARPX_PACKAGE_MAINTAINER '${IWARPX_PACKAGE_MAINTAINER}' is not "
                      "'Name <user@host.domain>' (Debian policy 5.6.2)")
endif()
set(CPACK_PACKAGE_CONTACT "${IWARPX_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${IWARPX_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "software iWARP libfabric provider and Open MPI components")
# The extended description (CPack puts the summary above it and indents it).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"libiwarpx-fi.so, the iwarpx libfabric provider (fi_iwarpx(7)): connected iWARP
over TCP (FI_EP_MSG), datagram iWARP over UDP (FI_EP_DGRAM) and reliable
datagrams (FI_EP_RDM), in user space, installed where libfabric loads DL
providers, so fi_info -p iwarpx lists it without FI_PROVIDER_PATH.

The Open MPI 4.1 components BTL iwarpx and OSC iwarpx over its RDM endpoint
(mpirun --mca btl self,iwarpx --mca osc iwarpx), the extension header
rdma/fi_ext_iwarpx.h and iwarpx.pc.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # iwarpx_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # libfabric1, libopenmpi3, libhwloc15, libc6, ...
set(CPACK_STRIP_FILES ON)                # as dh_strip would; the build tree keeps the symbols
if(IWARPX_BUILD_MCA AND OpenMPIInternal_VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.")
  # The components implement the BTL 3.1 / OSC 3.0 interfaces of this Open MPI series only
  # (cmake/FindOpenMPIInternal.cmake), which the sonames do not say.
  math(EXPR _iwx_next "${CMAKE_MATCH_2} + 1")
  # dpkg-shlibdeps adds the lower bound (libopenmpi3 (>= <the version built against>)).
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenmpi3 (<< ${CMAKE_MATCH_1}.${_iwx_next})")
endif()
# The provider is built against this libfabric's provider structures (fi_prov_ini); the
# symbols file alone would allow any libfabric1 >= 1.11.
if(FABRIC_VERSION MATCHES "^([0-9]+)\\.([0-9]+)")
  list(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS "libfabric1 (>= ${CMAKE_MATCH_1}.${CMAKE_MATCH_2})")
endif()
list(JOIN CPACK_DEBIAN_PACKAGE_DEPENDS ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libfabric-bin, openmpi-bin")
include(CPack)
