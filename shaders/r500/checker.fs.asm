-- checker.fs.asm: the texture colour under an 8 x 8 checkerboard in screen space: the
-- light squares keep the colour, the dark ones halve it. From the pixel centre
-- (temp[3] = (x, y, 0, 1)): f = frc(2x) and g = frc(2y) with the output modifier ×2 on a
-- MAD of x·1 + 0; a square is light when (f − ½)·(g − ½) >= 0 (both halves agree), which
-- CMP turns into a factor 1 or ½ for temp[1], the ROM's texture colour.
--
-- Run:   theia render --shader shaders/r500/checker.fs.asm
-- Try:   theia run-shader shaders/r500/checker.fs.asm --in temp3=0.1,-0.1,0,1 --in temp1=1,1,1,1

-- temp[4].rg = 2·(x, y)
src0.rgb = temp[3] :
  temp[4].rg = 2.0 * MAD src0.rg_ src0.11_ src0.00_ ;

-- temp[4].rg = frc(2x) − ½, frc(2y) − ½
src0.rgb = temp[4] :
  temp[4].rg = FRC src0.rg_ ;
src0.rgb = temp[4] ,
src1.rgb = float(48) : -- 0.5
  temp[4].rg = MAD src0.rg_ src0.11_ -src1.rr_ ;

-- temp[4].a = (f − ½)·(g − ½)
src0.rgb = temp[4] :
  temp[4].a = MAD src0.r src0.g src0.0 ;

-- out = temp[1] · (temp[4].a >= 0 ? 1 : ½)
src0.a   = temp[4] :
  temp[4].a = CMP src0.1 src0.h src0.a ;
OUT TEX_SEM_WAIT
src0.rgb = temp[1] ,
src0.a   = temp[4] :
  out[0].a   = MAX src0.1 src0.1 ,
  out[0].rgb = MAD src0.rgb src0.aaa src0.000 ;
