# IwarpxInstallPc.cmake: install(SCRIPT) part of `cmake --install` that writes iwarpx.pc for
# the prefix being installed to (CMAKE_INSTALL_PREFIX here is the install-time one, so
# `cmake --install build --prefix P` and CPack's /usr both get a correct file).
# Set by the install(CODE) before it: IWX_PC_TEMPLATE, IWX_PC_STAGING (a build-tree dir),
# IWX_PC_VERSION, IWX_PC_LIBDIR, IWX_PC_INCLUDEDIR, IWX_PC_PROVIDERDIR, IWX_PC_MCADIR
# (each relative to the prefix, or absolute; IWX_PC_MCADIR may be empty).
function(_iwx_pc_path out dir)
  if(dir STREQUAL "" OR IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

set(PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(PC_VERSION "${IWX_PC_VERSION}")
_iwx_pc_path(PC_INCLUDEDIR "${IWX_PC_INCLUDEDIR}")
_iwx_pc_path(PC_LIBDIR "${IWX_PC_LIBDIR}")
_iwx_pc_path(PC_PROVIDERDIR "${IWX_PC_PROVIDERDIR}")
_iwx_pc_path(PC_MCADIR "${IWX_PC_MCADIR}")
# One staging file per (DESTDIR, prefix): two installs of one build may run at once (ctest).
string(MD5 _iwx_key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(_iwx_out "${IWX_PC_STAGING}/${_iwx_key}/iwarpx.pc")
configure_file("${IWX_PC_TEMPLATE}" "${_iwx_out}" @ONLY)
set(_iwx_dest "${IWX_PC_LIBDIR}/pkgconfig")
if(NOT IS_ABSOLUTE "${_iwx_dest}")
  set(_iwx_dest "${CMAKE_INSTALL_PREFIX}/${_iwx_dest}")
endif()
file(INSTALL DESTINATION "${_iwx_dest}" TYPE FILE FILES "${_iwx_out}")
file(REMOVE_RECURSE "${IWX_PC_STAGING}/${_iwx_key}")
