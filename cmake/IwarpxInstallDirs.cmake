# IwarpxInstallDirs
# -----------------
# Where `cmake --install` (and the .deb, which installs with prefix /usr) puts each file.
# Included by the top-level CMakeLists.txt before the components, which install into these.
#
# Rule: every directory the system's own packages load plugins from, taken relative to that
# package's prefix, under CMAKE_INSTALL_PREFIX. With prefix /usr that is exactly where Debian's
# libfabric and Open MPI look; with another prefix the same layout below it (and the user
# points FI_PROVIDER_PATH / mca_base_component_path there). All defaults are relative, so
# `cmake --install build --prefix P` and CPack (prefix /usr) move everything together.
#
# Cache variables (kept from earlier versions; set them to an absolute path to pin a place,
# which then ignores the prefix; DESTDIR still applies):
#   IWARPX_FI_PROVIDER_DIR     libiwarpx-fi.so  (Debian 12, prefix /usr:
#                              /usr/lib/x86_64-linux-gnu/libfabric, libfabric's PROVDLDIR)
#   IWARPX_OMPI_COMPONENT_DIR  mca_btl_iwarpx.so, mca_osc_iwarpx.so  (Debian 12, prefix /usr:
#                              /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3, Open MPI's
#                              pkglibdir); only with IWARPX_BUILD_MCA
# Plain variables:
#   IWARPX_INSTALL_LIBDIR      libfabric's libdir relative to its prefix (lib/x86_64-linux-gnu);
#                              iwarpx.pc goes to its pkgconfig/
#   IWARPX_INSTALL_INCLUDEDIR, IWARPX_INSTALL_MAN7DIR   include, share/man/man7
include_guard(GLOBAL)
include(GNUInstallDirs)
find_package(PkgConfig REQUIRED)

# Relative path of ABS below PREFIX into OUT; ABS itself when it is not below PREFIX.
function(_iwarpx_below_prefix out abs prefix)
  string(REGEX REPLACE "/+$" "" prefix "${prefix}")
  string(LENGTH "${prefix}/" n)
  string(FIND "${abs}" "${prefix}/" at)
  if(prefix AND at EQUAL 0)
    string(SUBSTRING "${abs}" ${n} -1 rel)
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    set(${out} "${abs}" PARENT_SCOPE)
  endif()
endfunction()

pkg_get_variable(_iwx_fabric_prefix libfabric prefix)
pkg_get_variable(_iwx_fabric_libdir libfabric libdir)
if(NOT _iwx_fabric_libdir)
  message(FATAL_ERROR "pkg-config does not know libfabric (apt-get install libfabric-dev)")
endif()
_iwarpx_below_prefix(IWARPX_INSTALL_LIBDIR "${_iwx_fabric_libdir}" "${_iwx_fabric_prefix}")
if(IS_ABSOLUTE "${IWARPX_INSTALL_LIBDIR}")
  set(IWARPX_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})  # libfabric outside its prefix: plain lib
endif()
set(IWARPX_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
set(IWARPX_INSTALL_MAN7DIR ${CMAKE_INSTALL_MANDIR}/man7)
# Build trees configured before these defaults became relative cached the old absolute defaults
# (libfabric's and Open MPI's own directories); move exactly those values to the new defaults
# once, so `--prefix` works there too. A value a user chose stays.
if(NOT IWARPX_INSTALL_DIRS_RELATIVE)
  if(IWARPX_FI_PROVIDER_DIR STREQUAL "${_iwx_fabric_libdir}/libfabric")
    unset(IWARPX_FI_PROVIDER_DIR CACHE)
  endif()
  if(IWARPX_OMPI_COMPONENT_DIR AND IWARPX_OMPI_COMPONENT_DIR STREQUAL OpenMPIInternal_PKGLIBDIR)
    unset(IWARPX_OMPI_COMPONENT_DIR CACHE)
  endif()
  set(IWARPX_INSTALL_DIRS_RELATIVE ON CACHE INTERNAL "install dir defaults are prefix-relative")
endif()
# STRING, not PATH: CMake would turn a relative -D value of a PATH into an absolute one.
set(IWARPX_FI_PROVIDER_DIR "${IWARPX_INSTALL_LIBDIR}/libfabric" CACHE STRING
    "Where libiwarpx-fi.so is installed; relative: below CMAKE_INSTALL_PREFIX (libfabric's \
PROVDLDIR <libdir>/libfabric when the prefix is libfabric's)")
# Where this libfabric loads DL providers from when FI_PROVIDER_PATH is unset.
set(IWARPX_FABRIC_PROVDLDIR "${_iwx_fabric_libdir}/libfabric")

if(IWARPX_BUILD_MCA)
  find_package(OpenMPIInternal REQUIRED)
  set(_iwx_ompi_prefix "")
  if(OpenMPIInternal_OMPI_INFO)
    execute_process(COMMAND ${OpenMPIInternal_OMPI_INFO} --path prefix
                    OUTPUT_VARIABLE _iwx_out RESULT_VARIABLE _iwx_rc ERROR_QUIET)
    if(_iwx_rc EQUAL 0 AND _iwx_out MATCHES "Prefix: *([^\n]+)")
      string(STRIP "${CMAKE_MATCH_1}" _iwx_ompi_prefix)
    endif()
  endif()
  _iwarpx_below_prefix(_iwx_comp_rel "${OpenMPIInternal_PKGLIBDIR}" "${_iwx_ompi_prefix}")
  set(IWARPX_OMPI_COMPONENT_DIR "${_iwx_comp_rel}" CACHE STRING
      "Where mca_btl_iwarpx.so and mca_osc_iwarpx.so are installed; relative: below \
CMAKE_INSTALL_PREFIX (Open MPI's pkglibdir when the prefix is Open MPI's). \
~/.openmpi/components for a per-user install")
endif()

# Say where things go, and whether the installed copies will be found without path variables.
function(_iwarpx_report_dir what dir loads_from hint)
  set(abs "${dir}")
  if(NOT IS_ABSOLUTE "${abs}")
    set(abs "${CMAKE_INSTALL_PREFIX}/${abs}")
  endif()
  if(abs STREQUAL loads_from)
    message(STATUS "iwarpx: cmake --install puts ${what} in ${abs}, where it is found without "
                   "path variables")
  else()
    message(STATUS "iwarpx: cmake --install puts ${what} in ${abs}; without ${hint} it is "
                   "looked for in ${loads_from} (install with --prefix /usr, or the .deb)")
  endif()
endfunction()
_iwarpx_report_dir("libiwarpx-fi.so" "${IWARPX_FI_PROVIDER_DIR}" "${IWARPX_FABRIC_PROVDLDIR}"
                   "FI_PROVIDER_PATH")
if(IWARPX_BUILD_MCA)
  _iwarpx_report_dir("mca_{btl,osc}_iwarpx.so" "${IWARPX_OMPI_COMPONENT_DIR}"
                     "${OpenMPIInternal_PKGLIBDIR}" "OMPI_MCA_mca_base_component_path")
endif()
