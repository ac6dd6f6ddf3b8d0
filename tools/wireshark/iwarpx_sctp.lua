-- Wireshark/tshark helper for iWARP over SCTP (RFC 5043; docs/wire.md §2).
--
-- Wireshark 4.0 decodes SCTP (over UDP too: -d udp.port==PORT,sctp for the
-- RFC 6951 encapsulation usrsctp uses) and names PPID 16 "DDP Segment Chunk"
-- and 17 "DDP Stream Session Control", but calls no dissector for them:
--   * PPID 16: this file hands each message to Wireshark's built-in
--     "iwarp_ddp_rdmap" (registered by name, not in any Decode-As table), so
--     DDP and RDMAP fields show. With fragmented messages (segments larger
--     than one packet) add -o sctp.reassembly:TRUE.
--   * PPID 17: a small dissector of the session control message as iwarpx
--     reads RFC 5043 / RFC 6581 (docs/wire.md §2.1, unverified against the
--     RFC text): Function Code, PD Length, the IRD/ORD block of codes 5 and
--     6, private data.
--
-- Usage:
--   tshark -X lua_script:tools/wireshark/iwarpx_sctp.lua \
--          -d udp.port==PORT,sctp -r capture.pcapng -V

local p = Proto("iwarpx_sctp_session", "DDP Stream Session Control (iwarpx reading)")

local functions = {
  [1] = "Initiate", [2] = "Accept", [3] = "Reject", [4] = "Terminate",
  [5] = "Enhanced Initiate", [6] = "Enhanced Accept",
}

local f = {
  func = ProtoField.uint16("iwarpx_sctp_session.function", "Function Code", base.DEC, functions),
  pd_length = ProtoField.uint16("iwarpx_sctp_session.pd_length", "PD Length", base.DEC),
  ird = ProtoField.uint16("iwarpx_sctp_session.ird", "IRD", base.DEC, nil, 0x3FFF),
  ord = ProtoField.uint16("iwarpx_sctp_session.ord", "ORD", base.DEC, nil, 0x3FFF),
  ird_word = ProtoField.uint16("iwarpx_sctp_session.ird_word", "IRD word", base.HEX),
  ord_word = ProtoField.uint16("iwarpx_sctp_session.ord_word", "ORD word", base.HEX),
  private_data = ProtoField.bytes("iwarpx_sctp_session.private_data", "Private data"),
}
p.fields = { f.func, f.pd_length, f.ird, f.ord, f.ird_word, f.ord_word, f.private_data }

function p.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  if len < 4 then return 0 end
  local t = tree:add(p, tvb())
  local code = tvb(0, 2):uint()
  local pd_length = tvb(2, 2):uint()
  t:add(f.func, tvb(0, 2))
  t:add(f.pd_length, tvb(2, 2))
  local off = 4
  if (code == 5 or code == 6) and len >= 8 then
    t:add(f.ird_word, tvb(4, 2))
    t:add(f.ird, tvb(4, 2))
    t:add(f.ord_word, tvb(6, 2))
    t:add(f.ord, tvb(6, 2))
    off = 8
  end
  if len > off then t:add(f.private_data, tvb(off, len - off)) end
  pinfo.cols.info:append(" DDP Session " .. (functions[code] or ("function " .. code)) ..
                         " (PD Length " .. pd_length .. ")")
  return len
end

local ppi = DissectorTable.get("sctp.ppi")
ppi:add(17, p)
do
  local ok, d = pcall(Dissector.get, "iwarp_ddp_rdmap")
  if ok and d ~= nil then ppi:add(16, d) end
end
